/* What one wake-up of a sleeping thread costs in CPU, by what wakes it.
 * One thread on CPU 0 sleeps and wakes N = 4000 times, 500 us apart, and
 * prints its own CPU time (RUSAGE_THREAD) per wake-up. The mode, argv[1]:
 *   n  nanosleep(500 us)                 a timer the thread sets each time
 *   a  clock_nanosleep(ABSTIME, +500 us)  the same, absolute
 *   t  read() of a periodic timerfd       a timer the kernel re-arms itself
 *   e  epoll_wait on that timerfd         the same through epoll
 *   p  read() of a pipe written by a thread on CPU 1 every 500 us
 *                                         another CPU's wake-up, no timer
 * Written for rackbench's bench/runs/2026-11-24-openloop-uring. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sched.h>
static double cpu(){struct rusage r;getrusage(RUSAGE_THREAD,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
int p[2]; int N=4000;
void *pinger(void*a){cpu_set_t s;CPU_ZERO(&s);CPU_SET(1,&s);sched_setaffinity(0,sizeof s,&s);
 struct timespec ts={0,500000}; for(int i=0;i<N;i++){nanosleep(&ts,0); write(p[1],"x",1);} return 0;}
int main(int argc,char**argv){cpu_set_t s;CPU_ZERO(&s);CPU_SET(0,&s);sched_setaffinity(0,sizeof s,&s);
 char m=argv[1][0]; double c0=cpu(); struct timespec t0; clock_gettime(CLOCK_MONOTONIC,&t0);
 if(m=='n'){struct timespec ts={0,500000};for(int i=0;i<N;i++)nanosleep(&ts,0);}
 if(m=='a'){struct timespec d=t0;for(int i=0;i<N;i++){d.tv_nsec+=500000;if(d.tv_nsec>=1000000000){d.tv_nsec-=1000000000;d.tv_sec++;}clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&d,0);}}

 if(m=='t'){int fd=timerfd_create(CLOCK_MONOTONIC,0);struct itimerspec it={{0,500000},{0,500000}};timerfd_settime(fd,0,&it,0);unsigned long long x;for(int i=0;i<N;){read(fd,&x,8);i+=x;}}
 if(m=='e'){int fd=timerfd_create(CLOCK_MONOTONIC,TFD_NONBLOCK);struct itimerspec it={{0,500000},{0,500000}};timerfd_settime(fd,0,&it,0);int ep=epoll_create1(0);struct epoll_event ev={.events=EPOLLIN};epoll_ctl(ep,EPOLL_CTL_ADD,fd,&ev);unsigned long long x;for(int i=0;i<N;){epoll_wait(ep,&ev,1,-1);if(read(fd,&x,8)==8)i+=x;}}
 if(m=='p'){pipe(p);pthread_t th;pthread_create(&th,0,pinger,0);char b;for(int i=0;i<N;i++)read(p[0],&b,1);pthread_join(th,0);}
 struct timespec t1; clock_gettime(CLOCK_MONOTONIC,&t1);
 double c1=cpu(); printf("%c: %.1f us cpu per wake, wall %.2fs\n",m,(c1-c0)/N*1e6,(t1.tv_sec-t0.tv_sec)+(t1.tv_nsec-t0.tv_nsec)/1e9);}

# rackbench_telemetry.rb - where the time goes, seen from inside the app
# process, without touching the app (issue 15).
#
# A Rack middleware that rackbench wraps around the user's app (see
# wrapper.ru.erb beside this file). Per request it times the app call and,
# when nginx stamped the request (X-Request-Start: t=<seconds>), the wait
# from nginx to the app. Per process it reads GC.stat (runs, major/minor,
# time, allocated objects), the GC's detail at each flush (heap slots and
# pages, per size pool where GC.stat_heap exists, malloc and oldmalloc
# increase against their limits, old objects, compactions) and RSS, and
# tallies what triggered the GCs: after a request during which GC.count
# moved it reads GC.latest_gc_info once (a minor by :newobj or :malloc, a
# major by its :major_by), so a request without a GC pays one GC.count. Nothing is written per request: figures
# are aggregated in the process (counts and histogram buckets, under a
# mutex for threaded servers) and a background thread appends one JSON line
# a second to <dir>/telemetry-<pid>.jsonl, plus a last line at exit.
#
# Fork safety: the state remembers the pid that made it. The first request
# in a forked child (unicorn, puma cluster, passenger, uwsgi workers) finds
# another pid, drops the inherited state (it is the parent's) and starts
# its own file and flusher thread (threads do not survive fork). A process
# that never serves a request (a master) writes nothing.
#
# Nothing is lost on a graceful stop: the at_exit hook writes what is left,
# and a process that leaves by exit! (which skips at_exit) has still flushed
# everything older than one second. The line format is documented in
# docs/TELEMETRY.md; src/telemetry reads it. Plain Ruby, stdlib only.
#
# With ActiveRecord loaded (checked per request until it is), each request
# also counts the time its thread spent in SQL (the sql.active_record
# notifications) and the time it waited for a pool connection (how long
# ConnectionPool#checkout took: a module prepended to the pool, no change
# to the app). A request that carries X-Rackbench-Endpoint (a mix's) is
# also counted under that name: app, SQL and pool-wait time per endpoint.
#
# This file must not change what the app sees: env, status, headers and
# body pass through untouched, and a failure of the telemetry itself never
# reaches the request.

require "json"
require "etc"

module RackbenchTelemetry
  VERSION = 1
  DIR_ENV = "RACKBENCH_TELEMETRY_DIR"
  FLUSH_ENV = "RACKBENCH_TELEMETRY_FLUSH_S"
  PAGE_SIZE = (Etc.sysconf(Etc::SC_PAGESIZE) rescue 4096)
  GC_TIME = GC.stat.key?(:time) # Ruby 3.1 and later
  # GC.stat keys copied into each line's "gc" (those the Ruby has).
  GC_DETAIL = %i[
    heap_live_slots heap_free_slots heap_allocated_pages
    malloc_increase_bytes malloc_increase_bytes_limit
    oldmalloc_increase_bytes oldmalloc_increase_bytes_limit
    old_objects old_objects_limit compact_count
  ].freeze
  STAT_HEAP = GC.respond_to?(:stat_heap) # size pools: Ruby 3.2 and later

  # Bucket key for a value in microseconds: the value kept to two
  # significant digits (HDR-like, at most 10 % wide, 1 % in the middle of
  # each decade), so a bucket is its lower bound and the reader knows its
  # width from the key alone.
  def self.bucket(us)
    return 0 if us <= 0
    m = 1
    while us >= 100 # no string, no Float: this runs per request
      us /= 10
      m *= 10
    end
    us * m
  end

  # X-Request-Start as nginx, New Relic and Heroku write it: "t=<seconds>"
  # with a fraction (nginx's $msec: "t=1700000000.123"), or whole
  # milliseconds or microseconds since the epoch, with or without "t=".
  # Returns microseconds since the epoch, or nil when unreadable.
  def self.parse_request_start(value)
    return nil if value.nil?
    s = value.to_s.strip
    s = s[2..] if s.start_with?("t=")
    return nil unless s.match?(/\A\d+(\.\d+)?\z/)
    v = s.to_f
    if v > 1e15 then v.round            # microseconds
    elsif v > 1e12 then (v * 1e3).round # milliseconds
    elsif v > 1e8 then (v * 1e6).round  # seconds
    end
  end

  # One process's figures since its last flush.
  class State
    attr_reader :pid

    def initialize(dir, flush_s)
      @pid = Process.pid
      @dir = dir
      @flush_s = flush_s
      @lock = Mutex.new
      @file = nil
      @thread = nil
      @seq = 0
      @gc_base = nil
      @heap_base = nil
      @gc_seen = GC.count
      @due = Process.clock_gettime(Process::CLOCK_MONOTONIC) + flush_s
      clear
    end

    def clear
      @requests = 0
      @app = Hash.new(0)
      @app_sum = 0
      @queue = Hash.new(0)
      @queue_sum = 0
      @queued = 0
      @db_requests = 0
      @db = Hash.new(0)
      @db_sum = 0
      @pool = Hash.new(0)
      @pool_sum = 0
      @endpoints = {}
      @triggers = Hash.new(0)
    end

    # Endpoint names kept per flush; beyond them a request counts as "other".
    MAX_ENDPOINTS = 64

    def record(app_us, queue_us, db = nil, endpoint = nil, gc_count = nil)
      @lock.synchronize do
        @gc_base ||= gc_snapshot
        gc_trigger if gc_count && GC.count != gc_count
        @requests += 1
        @app[RackbenchTelemetry.bucket(app_us)] += 1
        @app_sum += app_us
        if queue_us
          @queued += 1
          @queue[RackbenchTelemetry.bucket(queue_us)] += 1
          @queue_sum += queue_us
        end
        if db
          @db_requests += 1
          @db[RackbenchTelemetry.bucket(db[0])] += 1
          @db_sum += db[0]
          @pool[RackbenchTelemetry.bucket(db[1])] += 1
          @pool_sum += db[1]
        end
        record_endpoint(endpoint, app_us, db) if endpoint
      end
      start_flusher unless @thread&.alive?
      # A server whose Ruby runs only inside requests (uWSGI's plugin
      # holds the VM while it waits in C) never schedules the flusher
      # thread: the request that finds a flush overdue does it.
      flush(false) if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= @due
    end

    def record_endpoint(name, app_us, db)
      name = "other" if !@endpoints.key?(name) && @endpoints.size >= MAX_ENDPOINTS
      e = (@endpoints[name] ||= {
        "requests" => 0, "app_us" => Hash.new(0), "app_us_sum" => 0,
        "db_requests" => 0, "db_us" => Hash.new(0), "db_us_sum" => 0,
        "pool_wait_us" => Hash.new(0), "pool_wait_us_sum" => 0,
      })
      e["requests"] += 1
      e["app_us"][RackbenchTelemetry.bucket(app_us)] += 1
      e["app_us_sum"] += app_us
      return unless db
      e["db_requests"] += 1
      e["db_us"][RackbenchTelemetry.bucket(db[0])] += 1
      e["db_us_sum"] += db[0]
      e["pool_wait_us"][RackbenchTelemetry.bucket(db[1])] += 1
      e["pool_wait_us_sum"] += db[1]
    end

    # What triggered the latest GC, counted once however many requests
    # saw it (threads): "minor_by_newobj", "minor_by_malloc",
    # "major_by_oldgen", "major_by_oldmalloc", ... as the Ruby names them.
    # GCs between two requests' reads are not classified.
    def gc_trigger
      count = GC.count
      return if count <= @gc_seen
      @gc_seen = count
      info = GC.latest_gc_info
      key = info[:major_by] ? "major_by_#{info[:major_by]}" : "minor_by_#{info[:gc_by]}"
      @triggers[key] += 1
    end

    # The GC's state now (heap, limits) and the per size pool slots, with
    # the objects each pool allocated since the last line.
    def gc_detail
      s = GC.stat
      d = { "ruby" => RUBY_VERSION, "engine" => RUBY_ENGINE }
      GC_DETAIL.each { |k| d[k.to_s] = s[k] if s.key?(k) }
      if STAT_HEAP
        heaps = GC.stat_heap
        base = @heap_base || {}
        d["heaps"] = heaps.map do |i, h|
          total = h[:total_allocated_objects]
          since = total && base[i] ? total - base[i] : nil
          [h[:slot_size], h[:heap_eden_slots], since]
        end
        @heap_base = heaps.transform_values { |h| h[:total_allocated_objects] }
      end
      d["triggers"] = @triggers
      d
    end

    def start_flusher
      @lock.synchronize do
        return if @thread&.alive?
        @thread = Thread.new do
          Thread.current.name = "rackbench-telemetry" if Thread.current.respond_to?(:name=)
          loop do
            sleep @flush_s
            flush(false)
          end
        end
      end
    end

    # Appends the figures since the last flush as one line. An interval
    # without requests writes nothing (its GC moves the baseline: GC while
    # idle is no request's cost), except the final line at exit.
    def flush(final, locked: true)
      line = nil
      take = lambda do
        gc = gc_snapshot
        base = @gc_base || gc
        @gc_base = gc
        detail = gc_detail
        @due = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @flush_s
        next if @requests.zero? && !final
        @seq += 1
        line = {
          "v" => VERSION, "pid" => @pid, "ppid" => Process.ppid, "seq" => @seq,
          "t_unix_s" => Process.clock_gettime(Process::CLOCK_REALTIME).round(3),
          "final" => final, "requests" => @requests,
          "app_us" => @app.to_a, "app_us_sum" => @app_sum,
          "queue_requests" => @queued, "queue_us" => @queue.to_a, "queue_us_sum" => @queue_sum,
          "gc_runs" => gc[:count] - base[:count],
          "gc_major_runs" => gc[:major] - base[:major],
          "gc_minor_runs" => gc[:minor] - base[:minor],
          "gc_time_ms" => GC_TIME ? gc[:time] - base[:time] : nil,
          "allocated_objects" => gc[:allocated] - base[:allocated],
          "rss_bytes" => rss_bytes,
          "db_requests" => @db_requests, "db_us" => @db.to_a, "db_us_sum" => @db_sum,
          "pool_wait_us" => @pool.to_a, "pool_wait_us_sum" => @pool_sum,
          "gc" => detail,
          "endpoints" => @endpoints.transform_values do |e|
            e.merge("app_us" => e["app_us"].to_a, "db_us" => e["db_us"].to_a,
                    "pool_wait_us" => e["pool_wait_us"].to_a)
          end,
        }
        clear
      end
      # Mutex#lock is refused in a trap handler; there the other threads
      # are stopped at a safe point anyway.
      if locked
        begin
          @lock.synchronize(&take)
        rescue ThreadError
          take.call
        end
      else
        take.call
      end
      write(JSON.generate(line)) if line
    rescue StandardError => e
      warn "rackbench telemetry: flush failed: #{e.class}: #{e.message}"
    end

    def write(line)
      @file ||= begin
        f = File.open(File.join(@dir, "telemetry-#{@pid}.jsonl"), "a")
        f.sync = true
        f
      end
      @file.write(line + "\n")
    end

    def gc_snapshot
      s = GC.stat
      { count: s[:count], major: s[:major_gc_count], minor: s[:minor_gc_count],
        time: s[:time] || 0, allocated: s[:total_allocated_objects] }
    end

    def rss_bytes
      File.read("/proc/self/statm").split[1].to_i * PAGE_SIZE
    rescue StandardError
      nil
    end
  end

  @state = nil
  @boot = Mutex.new

  class << self
    attr_accessor :dir, :flush_s

    # This process's state; a fresh one after a fork (the pid differs).
    def state
      s = @state
      return s if s && s.pid == Process.pid
      @boot = Mutex.new if s # a mutex held at fork time stays held in the child
      @boot.synchronize do
        @state = nil if @state && @state.pid != Process.pid
        @state ||= State.new(dir, flush_s)
      end
    end

    def at_exit_flush
      s = @state
      s.flush(true) if s && s.pid == Process.pid
    end
  end

  self.dir = ENV[DIR_ENV]
  self.flush_s = (ENV[FLUSH_ENV] || "1").to_f.clamp(0.05, 60)
  at_exit { RackbenchTelemetry.at_exit_flush }

  # uWSGI's Ruby plugin runs Ruby only inside requests and skips at_exit
  # when it stops workers, so neither the flusher thread nor the exit
  # flush can be relied on there. Its own timer does the flusher's job:
  # the master raises a uWSGI signal every second and each idle worker
  # runs the handler. (Signal number RACKBENCH_TELEMETRY_UWSGI_SIGNAL,
  # default 97, in case the app uses that one.)
  if defined?(::UWSGI) && ::UWSGI.respond_to?(:register_signal)
    begin
      sig = (ENV["RACKBENCH_TELEMETRY_UWSGI_SIGNAL"] || "97").to_i
      ::UWSGI.register_signal(sig, "workers", proc { |_| s = @state; s.flush(false) if s && s.pid == Process.pid })
      ::UWSGI.add_timer(sig, [flush_s.round, 1].max)
    rescue StandardError => e
      warn "rackbench telemetry: no uWSGI timer (#{e.class}: #{e.message}); the last second of each worker may be missing"
    end
  end

  # SQL and pool-wait time of the request on this thread, in microseconds.
  # The request's thread keeps its own counters: a threaded server's other
  # requests never add to them.
  module ActiveRecordTime
    DB = :rackbench_db_us
    POOL = :rackbench_pool_wait_us

    # Prepended to ActiveRecord::ConnectionAdapters::ConnectionPool: the
    # time checkout took is the time the thread waited for a connection
    # (a new connection's set-up included).
    module Checkout
      def checkout(*args, **kw)
        t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
        super
      ensure
        if (v = Thread.current[POOL])
          Thread.current[POOL] = v + Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond) - t0
        end
      end
    end

    @installed = false

    class << self
      # Hooks in once ActiveRecord is loaded (the app loads it after this
      # file); true from then on.
      def installed?
        return true if @installed
        return false unless defined?(::ActiveRecord::ConnectionAdapters::ConnectionPool) &&
                            defined?(::ActiveSupport::Notifications)
        @installed = true
        ::ActiveRecord::ConnectionAdapters::ConnectionPool.prepend(Checkout)
        ::ActiveSupport::Notifications.subscribe("sql.active_record") do |_name, start, finish, _id, _payload|
          if (v = Thread.current[DB])
            Thread.current[DB] = v + ((finish - start) * 1_000_000).round
          end
        end
        true
      rescue StandardError => e
        warn "rackbench telemetry: no ActiveRecord times (#{e.class}: #{e.message})"
        @installed = true
        false
      end

      def start
        Thread.current[DB] = 0
        Thread.current[POOL] = 0
      end

      # [db_us, pool_wait_us] of the request, counters off again.
      def finish
        t = [Thread.current[DB] || 0, Thread.current[POOL] || 0]
        Thread.current[DB] = nil
        Thread.current[POOL] = nil
        t
      end
    end
  end

  class Middleware
    def initialize(app, dir: nil)
      @app = app
      RackbenchTelemetry.dir = dir if dir && !ENV[DIR_ENV]
      d = RackbenchTelemetry.dir
      raise ArgumentError, "rackbench telemetry: set #{DIR_ENV} to a directory" if d.nil? || d.empty?
      raise ArgumentError, "rackbench telemetry: #{d} is not a directory" unless File.directory?(d)
    end

    def call(env)
      stamp = env["HTTP_X_REQUEST_START"]
      arrived = Process.clock_gettime(Process::CLOCK_REALTIME, :microsecond) if stamp
      ar = ActiveRecordTime.installed?
      ActiveRecordTime.start if ar
      gc_count = GC.count
      t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
      begin
        @app.call(env)
      ensure
        app_us = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond) - t0
        begin
          db = ActiveRecordTime.finish if ar
          start = stamp && RackbenchTelemetry.parse_request_start(stamp)
          queue_us = start ? [arrived - start, 0].max : nil
          RackbenchTelemetry.state.record(app_us, queue_us, db, env["HTTP_X_RACKBENCH_ENDPOINT"], gc_count)
        rescue StandardError => e
          warn "rackbench telemetry: #{e.class}: #{e.message}" unless @warned
          @warned = true
        end
      end
    end
  end
end

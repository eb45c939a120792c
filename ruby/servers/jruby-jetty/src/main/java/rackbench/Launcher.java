package rackbench;

import java.io.File;
import java.util.Locale;

import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.jruby.rack.RackServlet;
import org.jruby.rack.RackServletContextListener;

/**
 * rackbench's jruby-jetty adapter: one rackup file served by jruby-rack in
 * an embedded Jetty 9.4, on TCP only.
 *
 * <pre>
 * java -cp 'lib/*:classes' rackbench.Launcher --host H --port P --app FILE.ru
 *      [--min-runtimes N] [--max-runtimes N] [--threads N]
 * </pre>
 *
 * jruby-rack semantics: with max runtimes 1 a single JRuby runtime serves
 * every request thread at once (like Puma's threads, but without a GVL);
 * with max runtimes above 1 a pool of runtimes is used and each runtime
 * serves one request at a time, so at most max-runtimes requests run
 * concurrently. --threads is the number of Jetty request threads; one
 * acceptor and one selector thread are added on top. No request log. The
 * port opens only after the runtimes have booted (Jetty starts the handlers
 * before the connector). SIGTERM or SIGINT stops Jetty through its
 * shutdown hook, which destroys the runtimes, and the JVM exits.
 */
public final class Launcher {

    private static void usage(String problem) {
        System.err.println("rackbench.Launcher: " + problem);
        System.err.println("usage: rackbench.Launcher --host H --port P --app FILE.ru"
                + " [--min-runtimes N] [--max-runtimes N] [--threads N]");
        System.exit(2);
    }

    private static int positive(String name, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n > 0) return n;
        } catch (NumberFormatException e) {
            // fall through
        }
        usage(name + " must be a positive whole number, not '" + value + "'");
        return 0;
    }

    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        int port = -1;
        String app = null;
        int minRuntimes = 1;
        int maxRuntimes = 1;
        int threads = 16;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (i + 1 >= args.length) usage(flag + " needs a value");
            String value = args[++i];
            switch (flag) {
                case "--host": host = value; break;
                case "--port": port = positive(flag, value); break;
                case "--app": app = value; break;
                case "--min-runtimes": minRuntimes = positive(flag, value); break;
                case "--max-runtimes": maxRuntimes = positive(flag, value); break;
                case "--threads": threads = positive(flag, value); break;
                default: usage("unknown flag " + flag);
            }
        }
        if (port < 0) usage("--port is required");
        if (app == null) usage("--app is required");
        File rackup = new File(app).getAbsoluteFile();
        if (!rackup.isFile()) usage("no rackup file at " + rackup);
        if (minRuntimes > maxRuntimes) minRuntimes = maxRuntimes;

        // Request threads plus one acceptor and one selector; no reserved
        // threads, so --threads is the number of threads running requests.
        QueuedThreadPool pool = new QueuedThreadPool(threads + 2, Math.min(threads + 2, 8));
        pool.setName("jetty");
        pool.setReservedThreads(0);
        Server server = new Server(pool);

        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        ServerConnector connector =
                new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(host);
        connector.setPort(port);
        connector.setAcceptQueueSize(1024);
        connector.setReuseAddress(true);
        server.addConnector(connector);

        // The rackup's folder is the context's resource base and app root,
        // so the booter's Dir.chdir and relative requires behave as with
        // rackup; rackup.path is a resource path inside it.
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.setContextPath("/");
        context.setResourceBase(rackup.getParentFile().getPath());
        context.setInitParameter("rackup.path", "/" + rackup.getName());
        context.setInitParameter("app.root", "/");
        context.setInitParameter("public.root", "/");
        context.setInitParameter("rack.env", "production");
        context.setInitParameter("jruby.min.runtimes", Integer.toString(minRuntimes));
        context.setInitParameter("jruby.max.runtimes", Integer.toString(maxRuntimes));
        // With a pool, a request thread waits this long for a free runtime.
        context.setInitParameter("jruby.runtime.acquire.timeout", "30");
        context.setInitParameter("jruby.rack.logging", "stdout");
        context.addEventListener(new RackServletContextListener());
        context.addServlet(new ServletHolder("rack", new RackServlet()), "/*");
        server.setHandler(context);

        server.setStopAtShutdown(true);
        server.setStopTimeout(5000);
        long t0 = System.nanoTime();
        server.start();
        if (!context.isAvailable()) {
            System.err.println("rackbench.Launcher: the Rack application failed to start; see above");
            server.stop();
            System.exit(1);
        }
        System.out.println(String.format(Locale.ROOT,
                "rackbench jruby-jetty: %s on http://%s:%d/ (runtimes %d..%d, %d threads) ready in %.1f s",
                rackup, host, connector.getLocalPort(), minRuntimes, maxRuntimes, threads,
                (System.nanoTime() - t0) / 1e9));
        server.join();
    }
}

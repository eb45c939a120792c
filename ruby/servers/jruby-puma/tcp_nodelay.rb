# frozen_string_literal: true

# Loaded (-r) by the puma launcher scripts/jruby-puma.sh writes, before
# Puma's bin/puma. Puma keeps a small response in one TCP segment on Linux
# with TCP_CORK (and TCP_NODELAY on the listener with low_latency); on
# JRuby 9.4 both setsockopt calls are silent no-ops (strace shows no
# syscall), so headers and body leave as two writes under Nagle's
# algorithm and every keep-alive response waits for the client's delayed
# ACK: about 40 ms, ~100 requests/s on hello.ru whatever the server does.
# TCP_NODELAY on each accepted socket does reach the kernel, so set it
# there. RACKBENCH_JRUBY_PUMA_NODELAY=0 leaves Puma as it ships.
unless ENV["RACKBENCH_JRUBY_PUMA_NODELAY"] == "0"
  require "socket"
  require "puma"
  require "puma/server" # loads puma/client after what it needs

  module Puma
    # Sets TCP_NODELAY on the connection a Puma::Client wraps.
    module RackbenchTcpNoDelay
      def initialize(io, *rest)
        if io.is_a?(TCPSocket)
          begin
            io.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
          rescue IOError, SystemCallError
            nil # the peer may already be gone; Puma reports that itself
          end
        end
        super
      end
    end

    Client.prepend(RackbenchTcpNoDelay)
  end
end

# rails/config.ru - a minimal Rails app in one file: one controller that
# renders "hello world" at /, and one that computes a Fibonacci number at
# /fib (seed 001's Rails Fibonacci; the built-in app "rails-fib"). It
# measures the cost of the Rails stack (Rack middleware, routing,
# ActionController::Base) on top of the server.
# Needs Debian's ruby-railties (apt-get install --no-install-recommends
# ruby-railties); no bundler, no network, writes no files.
# Knobs: /fib?n=N (default 25, at most 35). Always runs in the production
# environment.
# Known-good answers: GET / -> 200, body "hello world";
# GET /fib -> 200, body "fib(25) = 75025".
ENV["RAILS_ENV"] = "production"

require "logger"
require "rails"
require "action_controller/railtie"

class RackbenchRails < Rails::Application
  config.root = __dir__
  config.eager_load = true
  config.cache_classes = true
  config.consider_all_requests_local = false
  config.action_controller.perform_caching = true
  config.cache_store = :null_store
  config.public_file_server.enabled = false
  config.secret_key_base = "rackbench-benchmark-only-not-a-secret-0123456789abcdef0123456789abcdef"
  config.hosts.clear
  config.logger = Logger.new(File::NULL)
  config.log_level = :warn
end

class HelloController < ActionController::Base
  def index
    render plain: "hello world"
  end
end

# The same naive recursion as fib.ru, inside a Rails action.
class FibController < ActionController::Base
  def self.fib(n)
    n < 2 ? n : fib(n - 1) + fib(n - 2)
  end

  def show
    n = params.fetch(:n, "25").to_i.clamp(0, 35)
    render plain: "fib(#{n}) = #{FibController.fib(n)}"
  end
end

RackbenchRails.initialize!
RackbenchRails.routes.draw do
  root "hello#index"
  get "fib", to: "fib#show"
end

# Rails 6.1 sends no Content-Length; without one thin and uwsgi close the
# connection after every response, and uwsgi --http11-socket never ends it.
use Rack::ContentLength
run RackbenchRails

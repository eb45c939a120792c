# rails/config.ru - a minimal Rails app in one file: one controller that
# renders "hello world" at /. It measures the cost of the Rails stack
# (Rack middleware, routing, ActionController::Base) on top of the server.
# Needs Debian's ruby-railties (apt-get install --no-install-recommends
# ruby-railties); no bundler, no network, writes no files.
# Knobs: none. Always runs in the production environment.
# Known-good answer: GET / -> 200, body "hello world".
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

RackbenchRails.initialize!
RackbenchRails.routes.draw do
  root "hello#index"
end

# Rails 6.1 sends no Content-Length; without one thin and uwsgi close the
# connection after every response, and uwsgi --http11-socket never ends it.
use Rack::ContentLength
run RackbenchRails

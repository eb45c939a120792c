# blog/config.ru - a database-backed Rails 6.1 app that looks like
# production: authors, posts and comments in SQLite or PostgreSQL through
# ActiveRecord's connection pool, pages rendered with ERB and partials, a
# JSON API, a slow search, a write and a call to a slow external service.
# Needs Debian's ruby-rails, ruby-sqlite3 and ruby-pg; no bundler, no
# network. The data set (models.rb): 50 authors, 1000 posts, 5000
# comments, written by seed.rb before the server starts.
# Env: DATABASE_URL (sqlite3:/path/blog.sqlite3 or postgres://...; rackbench
# sets it), DB_POOL (the pool per process, default 5; --set pool=N),
# EXTERNAL_MS (the external call's delay, default 20).
# Endpoints and known-good answers:
#   GET  /posts                 -> 200, "rendered 25 posts" (?page=N, ?per=N up to 100)
#   GET  /posts/ID              -> 200, "<h1>Post ID:" (the post, its author, its comments)
#   GET  /api/posts/ID.json     -> 200, "\"id\":ID" (JSON, with a comment count)
#   GET  /search?q=WORD         -> 200, "comments matching" (LIKE over every comment)
#   POST /posts/ID/comments     -> 201, "created comment" (body comment[body]=TEXT)
#   GET  /external              -> 200, "external service answered in 20 ms"
ENV["RAILS_ENV"] = "production"

require "logger"
require "json"
require "rails"
require "active_record/railtie"
require "action_controller/railtie"
require "action_view/railtie"
require_relative "models"

abort "blog: set DATABASE_URL (rackbench sets it; see config.ru)" unless ENV["DATABASE_URL"]
# Rails reads DATABASE_URL when there is no config/database.yml; the pool
# size travels in it.
ENV["DATABASE_URL"] = Blog.url(ENV["DATABASE_URL"], ENV["DB_POOL"] || "5")

class BlogApp < Rails::Application
  config.root = __dir__
  config.eager_load = true
  config.cache_classes = true
  config.consider_all_requests_local = false
  config.action_controller.perform_caching = false
  config.cache_store = :null_store
  config.public_file_server.enabled = false
  config.secret_key_base = "rackbench-benchmark-only-not-a-secret-0123456789abcdef0123456789abcdef"
  config.hosts.clear
  config.logger = Logger.new(File::NULL)
  config.log_level = :warn
  config.paths["app/views"] = File.join(__dir__, "views")
  config.active_record.dump_schema_after_migration = false
end

# No forgery protection: without config.load_defaults Rails 6.1 turns none
# on, so the load's POSTs need no token.
class ApplicationController < ActionController::Base
end

class PostsController < ApplicationController
  def index
    per = params.fetch(:per, "25").to_i.clamp(1, 100)
    page = params.fetch(:page, "1").to_i.clamp(1, 10_000)
    @posts = Post.includes(:author).order(id: :desc).offset((page - 1) * per).limit(per).to_a
    @page = page
  end

  def show
    @post = Post.includes(:author).find(params[:id])
    @comments = @post.comments.includes(:author).order(:id).to_a
  end
end

class ApiController < ApplicationController
  def show
    post = Post.includes(:author).find(params[:id])
    render json: {
      id: post.id, title: post.title, author: post.author.name,
      published_at: post.published_at.utc.iso8601,
      comments: post.comments.count, words: post.body.split.size,
    }
  end
end

class SearchController < ApplicationController
  def index
    q = params.fetch(:q, "latency").to_s[0, 40]
    scope = Comment.where("body LIKE ?", "%#{Comment.sanitize_sql_like(q)}%")
    @count = scope.count
    @comments = scope.includes(:post).order(id: :desc).limit(20).to_a
    render plain: "#{@count} comments matching #{q}\n" +
      @comments.map { |c| "#{c.id} on #{c.post.title}: #{c.body}" }.join("\n")
  end
end

class CommentsController < ApplicationController
  def create
    post = Post.find(params[:post_id])
    body = params.dig(:comment, :body).to_s
    body = "a comment from the load" if body.empty?
    c = post.comments.create!(author_id: post.id % Blog::AUTHORS + 1, body: body[0, 1000],
                              created_at: Time.now.utc)
    render plain: "created comment #{c.id} on post #{post.id}", status: :created
  end
end

class ExternalController < ApplicationController
  DELAY_MS = (ENV["EXTERNAL_MS"] || "20").to_i.clamp(0, 60_000)

  # Stands for an HTTP call to another service: the thread waits, holding
  # no database connection.
  def show
    sleep DELAY_MS / 1000.0
    render plain: "external service answered in #{DELAY_MS} ms"
  end
end

BlogApp.initialize!
BlogApp.routes.draw do
  get "posts", to: "posts#index"
  get "posts/:id", to: "posts#show"
  post "posts/:post_id/comments", to: "comments#create"
  get "api/posts/:id", to: "api#show", defaults: { format: "json" }
  get "search", to: "search#index"
  get "external", to: "external#show"
end

# Rails 6.1 sends no Content-Length; without one thin and uwsgi close the
# connection after every response.
use Rack::ContentLength
run BlogApp

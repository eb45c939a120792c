# blog/seed.rb - creates the blog's tables and writes its fixed data set
# (models.rb: 50 authors, 1000 posts, 5000 comments), or counts its rows.
# rackbench runs it before the server starts, with the server's DATABASE_URL:
#   ruby seed.rb seed    -> prints "seeded 6050 rows", "database SQLite 3.40.1",
#                           and the Ruby and ActiveRecord it ran on ("ruby ...",
#                           "activerecord 6.1.7.10": the trial's runtime's)
#   ruby seed.rb count   -> prints "rows N"
# BLOG_SEED_EXTRA_SQL, when set, is run after the seed (a test's way to
# make a seed fail with the database's own message).
require "active_record"
require_relative "models"

url = ENV["DATABASE_URL"] or abort("blog seed: set DATABASE_URL")
ActiveRecord::Base.establish_connection(url)
begin
  case ARGV[0]
  when "seed"
    ActiveRecord::Base.transaction do
      Blog.define_schema
      Blog.seed!
    end
    extra = ENV["BLOG_SEED_EXTRA_SQL"]
    ActiveRecord::Base.connection.execute(extra) if extra && !extra.empty?
    puts "seeded #{Blog.rows} rows"
    puts "database #{Blog.version}"
    puts "ruby #{RUBY_DESCRIPTION}"
    puts "activerecord #{ActiveRecord::VERSION::STRING}"
  when "count"
    puts "rows #{Blog.rows}"
  else
    abort "usage: ruby seed.rb seed|count"
  end
rescue ActiveRecord::ActiveRecordError => e
  # The database's own message, on one line, without the Ruby backtrace.
  abort "blog seed failed: #{e.message.lines.first.to_s.strip}"
end

# blog/models.rb - the blog's schema, models and seed data, shared by the
# app (config.ru) and the seed script (seed.rb). Plain ActiveRecord 6.1.
#
# The data set is fixed: AUTHORS authors, POSTS posts (each by author
# (id % AUTHORS) + 1), COMMENTS comments (comment k on post (k % POSTS) + 1,
# by author (k % AUTHORS) + 1). Every text is built from its row's number
# alone, so every seed writes the same rows in the same order.

module Blog
  AUTHORS = 50
  POSTS = 1000
  COMMENTS = 5000
  SEEDED_ROWS = AUTHORS + POSTS + COMMENTS

  WORDS = %w[
    server thread worker queue latency request socket pool database index
    cache memory garbage collector rails puma unicorn passenger thin nginx
    kernel scheduler backlog throughput percentile template partial query
    connection transaction commit rollback vacuum replica primary shard
  ].freeze

  # N words chosen by a small linear congruential generator seeded with
  # the row's number: the same text for the same row, every time.
  def self.words(seed, n)
    x = seed * 2_654_435_761 % 4_294_967_296
    Array.new(n) do
      x = (x * 1_103_515_245 + 12_345) % 2_147_483_648
      WORDS[(x >> 8) % WORDS.size]
    end.join(" ")
  end

  def self.url(url, pool)
    return url if pool.nil? || pool.empty?
    url + (url.include?("?") ? "&" : "?") + "pool=#{Integer(pool)}"
  end

  def self.define_schema
    ActiveRecord::Schema.verbose = false
    ActiveRecord::Schema.define do
      drop_table :comments, if_exists: true
      drop_table :posts, if_exists: true
      drop_table :authors, if_exists: true
      create_table :authors do |t|
        t.string :name, null: false
        t.string :email, null: false
      end
      create_table :posts do |t|
        t.references :author, null: false, index: true
        t.string :title, null: false
        t.text :body, null: false
        t.datetime :published_at, null: false
      end
      create_table :comments do |t|
        t.references :post, null: false, index: true
        t.references :author, null: false, index: true
        t.text :body, null: false
        t.datetime :created_at, null: false
      end
    end
  end

  def self.seed!
    epoch = Time.utc(2026, 1, 1)
    Author.insert_all!(Array.new(AUTHORS) do |i|
      { id: i + 1, name: "Author #{i + 1}", email: "author#{i + 1}@blog.test" }
    end)
    POSTS.times.each_slice(500) do |ids|
      Post.insert_all!(ids.map do |i|
        { id: i + 1, author_id: (i + 1) % AUTHORS + 1, title: "Post #{i + 1}: #{words(i, 4)}",
          body: words(i + 100_000, 120), published_at: epoch + i * 3600 }
      end)
    end
    COMMENTS.times.each_slice(1000) do |ids|
      Comment.insert_all!(ids.map do |k|
        { id: k + 1, post_id: k % POSTS + 1, author_id: k % AUTHORS + 1,
          body: words(k + 200_000, 25), created_at: epoch + k * 60 }
      end)
    end
    # PostgreSQL's sequences do not move with explicit ids.
    conn = ActiveRecord::Base.connection
    if conn.adapter_name =~ /postg/i
      %w[authors posts comments].each { |t| conn.reset_pk_sequence!(t) }
    end
  end

  def self.version
    conn = ActiveRecord::Base.connection
    if conn.adapter_name =~ /postg/i
      "PostgreSQL #{conn.select_value("SHOW server_version")}"
    else
      "SQLite #{conn.select_value("SELECT sqlite_version()")}"
    end
  end

  def self.rows
    Author.count + Post.count + Comment.count
  end
end

class ApplicationRecord < ActiveRecord::Base
  self.abstract_class = true
end

class Author < ApplicationRecord
  has_many :posts
  has_many :comments
end

class Post < ApplicationRecord
  belongs_to :author
  has_many :comments
end

class Comment < ApplicationRecord
  belongs_to :post
  belongs_to :author
end

-- A replica writes each stream's new events as one chunk per flush, not
-- one row per event: the rows of a flush are bounded by the streams
-- running, not by their tokens, so thousands of open streams do not hold
-- the one SQLite writer that the exchanges also need. A chunk is its
-- events' lengths and data, keyed by the SSE id of its last event. Events
-- of the streams running during the upgrade are not carried over: a stream
-- is a reply in flight, whose reply is stored whole with its exchange.
--
-- +goose Up
DROP TABLE `message_stream_events`;
CREATE TABLE `message_stream_chunks` (`message_id` text,`last_seq` integer,`data` blob NOT NULL,
  PRIMARY KEY (`message_id`,`last_seq`));

-- +goose Down
DROP TABLE `message_stream_chunks`;
CREATE TABLE `message_stream_events` (`message_id` text,`seq` integer,`data` blob NOT NULL,
  PRIMARY KEY (`message_id`,`seq`));

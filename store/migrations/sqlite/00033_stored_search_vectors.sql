-- PostgreSQL's migration 00033 stores the search vectors of memories and
-- knowledge chunks. SQLite's FTS4 tables already keep their own index of
-- the terms, so there is nothing to change here; the migration exists to
-- keep both databases at the same schema version.
--
-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;

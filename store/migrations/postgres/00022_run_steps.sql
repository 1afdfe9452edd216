-- A run keeps how its message came in (input) and its finished steps
-- (steps), both JSON: whoever resumes a run whose replica was lost starts
-- its turn again from them, never running a finished tool call twice.
--
-- +goose Up
ALTER TABLE runs ADD COLUMN input text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN steps text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN steps;
ALTER TABLE runs DROP COLUMN input;

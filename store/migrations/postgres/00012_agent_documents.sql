-- Agents keep the document Get Agent answers, but its metrics, written by
-- the transaction of every change it shows, so a Get copies it instead of
-- decoding and rendering the fields. document_rev says what rendered it;
-- existing rows start with none (0) and are rendered when first read.
--
-- +goose Up
ALTER TABLE agents ADD COLUMN document text DEFAULT '' NOT NULL;
ALTER TABLE agents ADD COLUMN document_rev bigint DEFAULT 0 NOT NULL;

-- +goose Down
ALTER TABLE agents DROP COLUMN document_rev;
ALTER TABLE agents DROP COLUMN document;

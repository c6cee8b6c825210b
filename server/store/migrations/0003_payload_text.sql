-- kbkit schema, version 3: a command's payload is kept as the text it was
-- logged with (json, not jsonb), so that its echo to live subscribers and
-- its replay from the log are the same bytes (spec/PROTOCOL.md 4.4).

ALTER TABLE command_log ALTER COLUMN payload TYPE json USING payload::text::json;

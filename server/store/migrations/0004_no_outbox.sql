-- kbkit schema, version 4: no outbox table. Its rows repeated what
-- command_log holds (page_id, seq), and nothing read them: the dispatcher
-- reads committed commands from command_log, notified by NOTIFY
-- (spec/PROTOCOL.md section 6).

DROP TABLE outbox;

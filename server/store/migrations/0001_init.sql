-- kbkit schema, version 1. Every table carries workspace_id so the schema can
-- be distributed by workspace.

CREATE TABLE workspaces (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE devices (
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    id           uuid PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,  -- sha256 of the bearer token
    name         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A page row exists from its create-page on. seq is the last seq of its log.
CREATE TABLE pages (
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    id           uuid PRIMARY KEY,
    title        text NOT NULL,
    dir          text NOT NULL DEFAULT '',
    merged_into  uuid,
    seq          bigint NOT NULL DEFAULT 0
);
-- Titles are unique among live pages (titles are stored NFC-normalised).
CREATE UNIQUE INDEX pages_live_title ON pages (workspace_id, title) WHERE merged_into IS NULL;

CREATE TABLE aliases (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL REFERENCES pages (id),
    ord          int NOT NULL,
    alias        text NOT NULL,
    PRIMARY KEY (page_id, ord)
);
CREATE INDEX aliases_lookup ON aliases (workspace_id, alias);

CREATE TABLE nodes (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL REFERENCES pages (id),
    id           text NOT NULL,
    parent       text,
    rank         text COLLATE "C" NOT NULL,
    kind         text NOT NULL,
    text         text NOT NULL,
    outputs      jsonb,
    cells        jsonb,
    PRIMARY KEY (page_id, id)
);
CREATE INDEX nodes_children ON nodes (page_id, parent, rank);

-- Index rows, rewritten for changed nodes only.
CREATE TABLE links (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL,
    node_id      text NOT NULL,
    ord          int NOT NULL,
    kind         text NOT NULL,          -- link | tag | embed
    title        text NOT NULL,          -- NFC-normalised
    target_page  uuid,                   -- resolved when written
    PRIMARY KEY (page_id, node_id, ord)
);
CREATE INDEX links_by_title ON links (workspace_id, title);
CREATE INDEX links_by_target ON links (target_page);

CREATE TABLE labels (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL,
    node_id      text NOT NULL,
    key          text NOT NULL,
    text         text NOT NULL,
    number       double precision,
    PRIMARY KEY (page_id, node_id)
);

CREATE TABLE deps (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL,
    node_id      text NOT NULL,
    ord          int NOT NULL,
    cell         text NOT NULL,
    on_cell      text,
    on_page      text,
    on_label     text,
    PRIMARY KEY (page_id, node_id, ord)
);

-- Every command ever decided, committed (with seq) or rejected (without).
CREATE TABLE command_log (
    workspace_id uuid NOT NULL,
    id           uuid PRIMARY KEY,
    page_id      uuid NOT NULL,
    seq          bigint,
    device_id    uuid,
    type         text NOT NULL,
    payload      jsonb NOT NULL,
    inverse      jsonb,
    outcome      text NOT NULL CHECK (outcome IN ('committed', 'rejected')),
    code         text,
    message      text,
    cause        uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (page_id, seq)
);

-- One row per committed command, for dispatch to subscribers.
CREATE TABLE outbox (
    workspace_id uuid NOT NULL,
    page_id      uuid NOT NULL,
    seq          bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (page_id, seq)
);

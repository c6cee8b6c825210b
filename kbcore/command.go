package kbcore

import (
	"encoding/json"
)

// Command types (spec/README.md section 2); their rows: registry.go.
const (
	TypeCreateAfter = "create-after"
	TypeEditText    = "edit-text"
	TypeMoveNode    = "move-node"
	TypeIndent      = "indent"
	TypeOutdent     = "outdent"
	TypeDelete      = "delete"
	TypeRestore     = "restore"
	TypeSetOutputs  = "set-outputs"
	TypeSetCell     = "set-cell"
	TypeCreatePage  = "create-page"
	TypeSetAliases  = "set-aliases"
	TypeRenamePage  = "rename-page"
	TypeMergePage   = "merge-page"
	TypeRestorePage = "restore-page"
)

// Rejection codes the page reducer returns. They are part of the spec;
// messages are free text.
const (
	CodeInvalidPayload   = "invalid-payload"
	CodeUnknownType      = "unknown-type"
	CodeNodeNotFound     = "node-not-found"
	CodeParentNotFound   = "parent-not-found"
	CodeNodeExists       = "node-exists"
	CodeAnchorNotSibling = "anchor-not-sibling"
	CodeCycle            = "cycle"
	CodeNoPrevSibling    = "no-previous-sibling"
	CodeAtRoot           = "at-root"
	CodeNotACodeCell     = "not-a-code-cell"
	CodeNotATable        = "not-a-table"
	CodePageExists       = "page-exists"
	CodePageNotFound     = "page-not-found"
	CodePageMerged       = "page-merged"
	CodeTitleEmpty       = "title-empty"
	CodeMergeIntoSelf    = "merge-into-self"
	CodeAlreadyMerged    = "already-merged"
	CodeNotMerged        = "not-merged"
	CodeRankExhausted    = "rank-exhausted"
)

// Command is one change to one page. On the wire it travels inside an
// envelope with device and page ids; the reducer needs only these fields.
type Command struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	// Parsed is what a parser learnt of Payload in the one pass that
	// validated it, so that nothing after it reads the bytes again. It
	// never travels (it is not JSON).
	Parsed Parsed `json:"-"`
}

// Parsed is what a validating parser found in a payload's bytes (the zero
// value: nothing). Whoever sets it vouches that it is true of the Payload
// beside it: the reducer then takes Value instead of decoding (and never
// writes to it), and the server's log keeps canonical bytes as they
// stand. spec/schema's envelope tests
// (checkParsed) hold the server's parser to it.
type Parsed struct {
	// Value is the payload decoded into a pointer to its type's payload
	// struct (the registry row's Payload), as decoding Payload would
	// give; nil, or a pointer of another type: not decoded.
	Value any
	// Canonical: Payload is canonical JSON as it stands (spec/README.md
	// section 1).
	Canonical bool
}

// Rejection says why a command was not applied.
type Rejection struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (r *Rejection) Error() string { return "kbcore: rejected: " + r.Code + ": " + r.Message }

// Payloads. Absent optional ids and explicit nulls mean the same thing.

// CreateAfter is the payload of create-after.
type CreateAfter struct {
	After  *string `json:"after,omitempty"`
	Parent *string `json:"parent,omitempty"`
	Node   *string `json:"node,omitempty"`
	Text   *string `json:"text"`
	Kind   *string `json:"kind,omitempty"`
	Rank   *string `json:"rank,omitempty"`
}

// EditText is the payload of edit-text.
type EditText struct {
	Node *string `json:"node"`
	Text *string `json:"text"`
}

// MoveNode is the payload of move-node; it is also the inverse of indent,
// outdent and move-node. Parent and after must be present (maybe null).
type MoveNode struct {
	Node   *string    `json:"node"`
	Parent NullableID `json:"parent"`
	After  NullableID `json:"after"`
	Rank   *string    `json:"rank,omitempty"`
}

// NullableID is a payload field that must be present but may be null.
type NullableID struct {
	Set bool
	ID  *string
}

// UnmarshalJSON records that the field was present.
func (n *NullableID) UnmarshalJSON(b []byte) error {
	n.Set, n.ID = true, nil
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	n.ID = &s
	return nil
}

// MarshalJSON writes the id or null.
func (n NullableID) MarshalJSON() ([]byte, error) {
	if n.ID == nil {
		return []byte("null"), nil
	}
	return json.Marshal(*n.ID)
}

func nullable(id *string) NullableID { return NullableID{Set: true, ID: id} }

// NodeRef is the payload of indent, outdent and delete.
type NodeRef struct {
	Node *string `json:"node"`
}

// Restore is the payload of restore.
type Restore struct {
	Nodes *[]Node `json:"nodes"`
}

// SetOutputs is the payload of set-outputs.
type SetOutputs struct {
	Node    *string   `json:"node"`
	Outputs *[]Output `json:"outputs"`
}

// SetCell is the payload of set-cell.
type SetCell struct {
	Node  *string `json:"node"`
	Cell  *string `json:"cell"`
	Value *string `json:"value"`
}

// CreatePage is the payload of create-page.
type CreatePage struct {
	Title *string `json:"title"`
	Dir   *string `json:"dir,omitempty"`
}

// SetAliases is the payload of set-aliases.
type SetAliases struct {
	Aliases *[]string `json:"aliases"`
}

// RenamePage is the payload of rename-page.
type RenamePage struct {
	Title   *string   `json:"title"`
	Aliases *[]string `json:"aliases,omitempty"`
}

// MergePage is the payload of merge-page.
type MergePage struct {
	Into *string `json:"into"`
}

// RestorePage is the payload of restore-page: the id of the page (a check
// against applying it to the wrong page) and the nodes it had before it was
// merged. A merge never changes the page's title, aliases or dir.
type RestorePage struct {
	Page  *string `json:"page"`
	Nodes *[]Node `json:"nodes"`
}

func ptr[T any](v T) *T { return &v }

// mkCommand builds an inverse or derived command, its payload in
// canonical form (the log keeps it so); payloads here always marshal and
// canonicalize, so the errors are impossible.
func mkCommand(typ string, payload any) Command {
	if b := encodeFast(payload); b != nil {
		return Command{Type: typ, Payload: b}
	}
	b, _ := json.Marshal(payload)
	if c, err := Canonical(b); err == nil {
		b = c
	}
	return Command{Type: typ, Payload: b}
}

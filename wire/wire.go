package wire

import (
	"net/http"

	"github.com/subspace/kbkit/kbcore"
)

// Procedure paths (spec/PROTOCOL.md section 4).
const (
	PathCommand      = "kb.command"
	PathPage         = "kb.page"
	PathOnPage       = "kb.onPage"
	PathOnInvalidate = "kb.onInvalidate"
	PathWhoami       = "kb.whoami"
	PathLimits       = "kb.limits"
	PathRevoke       = "kb.revoke"
)

// tRPC error codes (the keys of @trpc/server's TRPC_ERROR_CODES_BY_KEY)
// a kbkit server answers (spec/PROTOCOL.md section 6).
const (
	CodeParseError          = "PARSE_ERROR"
	CodeBadRequest          = "BAD_REQUEST"
	CodeUnauthorized        = "UNAUTHORIZED"
	CodeForbidden           = "FORBIDDEN"
	CodeNotFound            = "NOT_FOUND"
	CodeMethodNotSupported  = "METHOD_NOT_SUPPORTED"
	CodeTimeout             = "TIMEOUT"
	CodeConflict            = "CONFLICT"
	CodePayloadTooLarge     = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia    = "UNSUPPORTED_MEDIA_TYPE"
	CodeTooManyRequests     = "TOO_MANY_REQUESTS"
	CodeInternalServerError = "INTERNAL_SERVER_ERROR"
	CodeServiceUnavailable  = "SERVICE_UNAVAILABLE"
)

// CodeInfo is an error code's JSON-RPC number and HTTP status.
type CodeInfo struct {
	RPC    int
	Status int
}

// Codes is the table of spec/PROTOCOL.md section 6.
var Codes = map[string]CodeInfo{
	CodeParseError:          {-32700, http.StatusBadRequest},
	CodeBadRequest:          {-32600, http.StatusBadRequest},
	CodeUnauthorized:        {-32001, http.StatusUnauthorized},
	CodeForbidden:           {-32003, http.StatusForbidden},
	CodeNotFound:            {-32004, http.StatusNotFound},
	CodeMethodNotSupported:  {-32005, http.StatusMethodNotAllowed},
	CodeTimeout:             {-32008, http.StatusRequestTimeout},
	CodeConflict:            {-32009, http.StatusConflict},
	CodePayloadTooLarge:     {-32013, http.StatusRequestEntityTooLarge},
	CodeUnsupportedMedia:    {-32015, http.StatusUnsupportedMediaType},
	CodeTooManyRequests:     {-32029, http.StatusTooManyRequests},
	CodeInternalServerError: {-32603, http.StatusInternalServerError},
	// tRPC v11 gives every 5xx key the JSON-RPC number -32603; the key and
	// httpStatus tell them apart.
	CodeServiceUnavailable: {-32603, http.StatusServiceUnavailable},
}

// ErrorShape is tRPC's error envelope body (no transformer): the value of
// "error" in an HTTP response or a WebSocket reply.
type ErrorShape struct {
	Message string    `json:"message"`
	Code    int       `json:"code"`
	Data    ErrorData `json:"data"`
}

// ErrorData is tRPC's default error data plus kbkit's fields.
type ErrorData struct {
	Code       string `json:"code"`
	HTTPStatus int    `json:"httpStatus"`
	Path       string `json:"path,omitempty"`
	// Rejection is set on CONFLICT: the command was decided and rejected.
	Rejection *kbcore.Rejection `json:"rejection,omitempty"`
	// Retryable says the call was not decided and may be repeated as is
	// (for kb.command: with the same id).
	Retryable bool `json:"retryable,omitempty"`
}

// Limits is kb.limits' answer (spec/PROTOCOL.md sections 4.6 and 8): the
// limits a client (or the protocol suite) must expect, in milliseconds
// and counts; 0 means no limit.
type Limits struct {
	MaxBody                   int64   `json:"max_body"`
	BodyTimeoutMS             int64   `json:"body_timeout_ms"`
	IdleTimeoutMS             int64   `json:"idle_timeout_ms"`
	ParamsTimeoutMS           int64   `json:"params_timeout_ms"`
	WriteTimeoutMS            int64   `json:"write_timeout_ms"`
	MaxConnections            int     `json:"max_connections"`
	MaxSubscriptionsPerSocket int     `json:"max_subscriptions_per_socket"`
	MaxSubscriptionsPerDevice int     `json:"max_subscriptions_per_device"`
	MaxBatch                  int     `json:"max_batch"`
	MaxSocketQueue            int     `json:"max_socket_queue"`
	AuthFailuresPerMinute     int     `json:"auth_failures_per_minute"`
	MaxInflight               int     `json:"max_inflight"`
	MaxQueue                  int     `json:"max_queue"`
	QueueTimeoutMS            int64   `json:"queue_timeout_ms"`
	MaxTitleChars             int     `json:"max_title_chars"`
	MaxAliases                int     `json:"max_aliases"`
	MaxPending                int     `json:"max_pending"`
	RateLimitPerSecond        float64 `json:"rate_limit_per_second"`
	// RateBurst is the token bucket's size: a client that sends at most
	// RateBurst calls at once and then RateLimitPerSecond a second is
	// never refused (0 when there is no rate limit).
	RateBurst int `json:"rate_burst"`
}

// CommandResult is kb.command's output: the command committed at Seq.
// Duplicate says the id had been decided before and this is the original
// outcome.
type CommandResult struct {
	Seq       int64 `json:"seq"`
	Duplicate bool  `json:"duplicate,omitempty"`
}

// PageInput is kb.page's input.
type PageInput struct {
	PageID string `json:"page_id"`
	// Pending are command ids whose outcomes the caller wants (at most
	// maxPending).
	Pending []string `json:"pending,omitempty"`
}

// OnPageInput is kb.onPage's input. LastEventID is the seq of the last
// event the client has, as a decimal string (tRPC v11 resends it after a
// reconnect); events with a greater seq are sent.
type OnPageInput struct {
	PageID      string  `json:"page_id"`
	LastEventID *string `json:"lastEventId,omitempty"`
}

// PageEvent is the data of one kb.onPage event: a committed command of
// the page. The message is {id, result: {type: "data", id: "<seq>",
// data: PageEvent}}: result.id is the tracked event id that @trpc/client
// v11 keeps and resends as lastEventId (spec/PROTOCOL.md).
type PageEvent struct {
	Cmd kbcore.Command `json:"cmd"`
	Seq int64          `json:"seq"`
}

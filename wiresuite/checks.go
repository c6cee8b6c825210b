package wiresuite

import "slices"

// Checks returns the suite, in the order it runs. Ids are stable.
func Checks() []Check {
	return slices.Concat(checks(), commandChecks(), hostileChecks(), certifyChecks(), limitChecks())
}

func checks() []Check {
	return []Check{
		// Operations and kb.whoami.
		{"protocol/healthz", "GET /healthz without a token answers 200 {\"status\":\"ok\"} (9)", checkHealthz},
		{"protocol/whoami", "kb.whoami answers {\"result\":{\"data\":{workspace_id, device_id}}} of the token's device (4.3)", checkWhoami},
		{"protocol/whoami-input", "kb.whoami accepts the input {} and refuses unknown fields with BAD_REQUEST (4.3, 6)", checkWhoamiInput},

		// kb.command outcomes.
		{"protocol/create-page", "create-page of a new page answers 200 {\"result\":{\"data\":{\"seq\":1}}} and kb.page shows it (4.1)", checkCreatePage},
		{"protocol/create-page-existing", "create-page on a born page is rejected page-exists (409) and writes nothing (4.1)", checkCreatePageExisting},
		{"protocol/command-seq", "the commands of a page take seqs 1, 2, 3... one by one (4.1)", checkCommandSeq},
		{"protocol/retry-committed", "a retried committed id answers its original seq with duplicate:true and takes no seq (4.1)", checkRetryCommitted},
		{"protocol/retry-create-page", "a retried create-page id answers seq 1 duplicate, not page-exists (4.1)", checkRetryCreatePage},
		{"protocol/rejection", "a rejection is HTTP 409, error.code -32009, data {code CONFLICT, httpStatus 409, path, rejection {code, message}} (4.1, 6)", checkRejection},
		{"protocol/rejection-retry", "a retried rejected id gets the same rejection, even once the command would commit (4.1)", checkRejectionRetry},
		{"protocol/rejection-no-seq", "a rejection takes no seq: the next command is the next seq (7)", checkRejectionNoSeq},
		{"protocol/command-unknown-page", "a command other than create-page on an unknown page is NOT_FOUND and not logged (4.1)", checkCommandUnknownPage},

		// kb.page.
		{"protocol/page-snapshot", "kb.page answers {doc, seq, outcomes}: doc is the canonical fold of the page's commands at seq (4.2)", checkPageSnapshot},
		{"protocol/page-outcomes", "kb.page's outcomes: committed {seq}, rejected {rejected: {code, message}}, never-seen ids absent (4.2)", checkPageOutcomes},
		{"protocol/page-outcomes-this-page", "kb.page's outcomes hold only ids decided on that page (4.2)", checkPageOutcomesThisPage},
		{"protocol/page-not-found", "kb.page of an unknown page is 404 NOT_FOUND -32004 (4.2, 6)", checkPageNotFound},
		{"protocol/page-bad-input", "kb.page with a bad input (not a uuid, unknown field, wrong type, missing) is 400 BAD_REQUEST naming the field (6)", checkPageBadInput},

		// The trust boundary.
		{"protocol/no-token", "a request without a token is 401 UNAUTHORIZED -32001 and writes nothing (2, 7)", checkNoToken},
		{"protocol/bad-token", "a token no device has is 401 UNAUTHORIZED and writes nothing (2, 7)", checkBadToken},
		{"protocol/forbidden-device", "a command whose device_id is not the token's is 403 FORBIDDEN -32003 and writes nothing (2, 7)", checkForbiddenDevice},
		{"protocol/parse-error", "a body that is not JSON is 400 PARSE_ERROR -32700 and writes nothing (6, 7)", checkParseError},
		{"protocol/parse-error-get", "a GET input that is not JSON is 400 PARSE_ERROR (6)", checkParseErrorGet},
		{"protocol/unknown-field", "an envelope with an unknown field is 400 BAD_REQUEST -32600 naming it, and writes nothing (4.1, 7)", checkUnknownField},
		{"protocol/unknown-payload-field", "a payload with an unknown field is 400 BAD_REQUEST naming it, and writes nothing (4.1, 7)", checkUnknownPayloadField},
		{"protocol/wrong-type", "a field of the wrong JSON type is 400 BAD_REQUEST naming it, and writes nothing (6, 7)", checkWrongType},
		{"protocol/missing-input", "an empty body or an envelope without a required field is 400 BAD_REQUEST, and writes nothing (3.1, 6)", checkMissingInput},
		{"protocol/bad-uuid", "ids that are not lower-case hyphenated uuids are 400 BAD_REQUEST, before the device check (4.1, 7)", checkBadUUID},
		{"protocol/unknown-command-type", "an unknown command type is 400 BAD_REQUEST, not a rejection (6)", checkUnknownCommandType},
		{"protocol/payload-too-large", "a body over the limit is 413 PAYLOAD_TOO_LARGE -32013 and writes nothing (7, 8)", checkPayloadTooLarge},
		{"protocol/get-input-too-large", "a GET input over the limit is 413 PAYLOAD_TOO_LARGE (6, 8)", checkGetInputTooLarge},
		{"protocol/unsupported-media-type", "an octet-stream or multipart body is 415 UNSUPPORTED_MEDIA_TYPE -32015 and writes nothing (3.1)", checkUnsupportedMediaType},
		{"protocol/missing-content-type", "a POST without Content-Type is read as JSON (3.1)", checkMissingContentType},
		{"protocol/method-not-supported", "a mutation over GET, a query over POST, a subscription over HTTP are 405 METHOD_NOT_SUPPORTED -32005 (3.1, 6)", checkMethodNotSupported},
		{"protocol/unknown-procedure", "an unknown procedure is 404 NOT_FOUND (6)", checkUnknownProcedure},
		{"protocol/trust-boundary-order", "a request failing two checks is answered by the first in the order of section 7", checkTrustBoundaryOrder},

		// HTTP transport.
		{"protocol/head", "HEAD on a procedure answers 204 with no body (3.1)", checkHead},
		{"protocol/get-input-encoding", "a GET input is URL-encoded JSON (%20 or + for spaces, any parameter order) (3.1)", checkGetInputEncoding},
		{"protocol/batch-commands", "a batch of two commands (?batch=1, {\"0\":...,\"1\":...}) answers an array of two results, run in order (3.1, 3.2)", checkBatchCommands},
		{"protocol/batch-queries", "a GET batch of kb.page and kb.whoami (no input key) answers both in call order (3.1, 3.2)", checkBatchQueries},
		{"protocol/batch-mixed-status", "a batch whose calls' statuses differ answers 207 with a result and an error in order (3.2)", checkBatchMixedStatus},
		{"protocol/batch-unknown-procedure", "a batch with an unknown procedure answers 207 with its NOT_FOUND in place (3.2, 6)", checkBatchUnknownProcedure},
		{"protocol/batch-request-errors", "a batch failing as a whole (no token, input not an object, not JSON) is one error object, not an array (3.2)", checkBatchRequestErrors},
		{"protocol/gapless-concurrent", "4 concurrent posters x 10 commands get seqs 2..41 once each, and kb.onPage replays them in order (4.1, 4.4, 11)", checkGaplessConcurrent},
		{"protocol/cross-workspace", "another workspace's page is NOT_FOUND exactly like a missing one, for kb.page, kb.command, create-page, kb.onPage (2)", checkCrossWorkspace},

		// WebSocket.
		{"protocol/ws-connection-params", "a WebSocket on /trpc?connectionParams=1 authenticates with its first message (extra keys ignored) (2, 5)", checkWSConnectionParams},
		{"protocol/ws-auth-header", "a WebSocket authenticates with the Authorization header of the upgrade (2, 5)", checkWSAuthHeader},
		{"protocol/ws-connection-params-win", "with a header and connectionParams, the connectionParams token wins (2)", checkWSConnectionParamsWin},
		{"protocol/ws-no-token", "an upgrade without a token or with a bad header token is refused with 401 UNAUTHORIZED (5.3)", checkWSNoToken},
		{"protocol/ws-bad-connection-params", "a bad connectionParams token gets {\"id\":null,\"error\":UNAUTHORIZED} and close 1008 (5.2, 5.3)", checkWSBadConnectionParams},
		{"protocol/ws-ping", "PING is answered with PONG (5.1)", checkWSPing},
		{"protocol/ws-parse-error", "a message that is not JSON gets {\"id\":null,\"error\":PARSE_ERROR} and the connection goes on (5.2)", checkWSParseError},
		{"protocol/ws-query-mutation", "queries and mutations over the WebSocket: replies echo the id (string or number) and jsonrpc (5.1)", checkWSQueryMutation},
		{"protocol/ws-call-errors", "failed calls over the WebSocket get {\"id\":ID,\"error\":...} with the HTTP transport's codes (5.2, 6)", checkWSCallErrors},
		{"protocol/ws-message-batch", "an array of messages is handled as the messages in array order (its commands get seqs in that order); one reply per message, with its id, in any order (5.1)", checkWSMessageBatch},
		{"protocol/ws-subscribe-replay-live", "kb.onPage replays the log from seq 1 as tracked events {seq, cmd}, then streams live commands, in order (4.4)", checkWSSubscribeReplayLive},
		{"protocol/ws-last-event-id", "kb.onPage with params.lastEventId sends exactly the commands after it, then live ones (4.4)", checkWSLastEventID},
		{"protocol/ws-last-event-id-input", "kb.onPage's input.lastEventId resumes too; params.lastEventId overrides it, and null in params is absent (4.4)", checkWSLastEventIDInput},
		{"protocol/ws-bad-last-event-id", "a lastEventId that is not a string of decimal digits or null (a number, \"\", \"+1\", \"-1\"), in params or input, is BAD_REQUEST (4.4)", checkWSBadLastEventID},
		{"protocol/ws-subscribe-errors", "kb.onPage of an unknown page is NOT_FOUND; a bad input is BAD_REQUEST (4.4)", checkWSSubscribeNotFound},
		{"protocol/ws-duplicate-id", "a subscription id already open is BAD_REQUEST (5.1)", checkWSDuplicateID},
		{"protocol/ws-stop", "subscription.stop answers {\"type\":\"stopped\"}, ends the events and frees the id (5.1)", checkWSStop},
		{"protocol/ws-message-too-big", "a WebSocket message over the limit closes the connection with 1009 (5.3, 8)", checkWSMessageTooBig},
		{"protocol/ws-invalidate", "kb.onInvalidate sends a directory invalidation (untracked) when a page is created (4.5)", checkWSInvalidate},
		{"protocol/reconnect", "on shutdown the server sends reconnect and closes with 1001; resubscribing with lastEventId loses and repeats nothing (5.3)", checkReconnect},

		{"protocol/metrics", "GET /metrics without a token serves the metrics of section 9", checkMetrics},
	}
}

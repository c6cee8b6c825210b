package client

import (
	"os"
	"strings"
)

// Every kbkit command that takes --server and --token falls back to these,
// so a token stays out of the process list and one export serves every
// command.
const (
	EnvURL   = "KBKIT_URL"
	EnvToken = "KBKIT_TOKEN"
)

// ServerFromEnv fills an unset server URL from $KBKIT_URL and an empty
// token list from $KBKIT_TOKEN.
func ServerFromEnv(server string, tokens []string) (string, []string) {
	if server == "" {
		server = strings.TrimSpace(os.Getenv(EnvURL))
	}
	if len(tokens) == 0 {
		if t := strings.TrimSpace(os.Getenv(EnvToken)); t != "" {
			tokens = []string{t}
		}
	}
	return server, tokens
}

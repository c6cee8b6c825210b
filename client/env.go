package client

import (
	"fmt"
	"net/url"
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

// CheckServerURL says what is wrong with a server URL before anything is
// sent: it must be absolute, http or https, with a host. "127.0.0.1:8080"
// would otherwise fail deep in net/url ("first path segment in URL cannot
// contain colon") or, as "localhost:8080", parse with scheme "localhost".
func CheckServerURL(s string) error {
	if !strings.Contains(s, "://") {
		return fmt.Errorf("server URL %q has no scheme: did you mean http://%s?", s, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("server URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("server URL %q: scheme %q, want http or https", s, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("server URL %q has no host", s)
	}
	return nil
}

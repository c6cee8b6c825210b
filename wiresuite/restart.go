package wiresuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
)

// RestartCommand returns an Env.Restart that runs command with the
// system shell (sh -c, cmd /C on Windows): for example
// "systemctl restart kbkit" or "kill -TERM $(cat server.pid)" when a
// supervisor starts the server again. The command must tell the server to
// shut down gracefully, as on SIGTERM (spec/PROTOCOL.md 5.3); it may
// return before the server is back, protocol/reconnect waits for that. A
// non-zero exit is an error, with the command's output.
func RestartCommand(command string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var cmd *exec.Cmd
		if runtime.GOOS == "windows" {
			cmd = exec.CommandContext(ctx, "cmd", "/C", command)
		} else {
			cmd = exec.CommandContext(ctx, "sh", "-c", command)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("the restart command %q: %v: %s", command, err, excerpt(out.Bytes(), 500))
		}
		return nil
	}
}

// RestartURL returns an Env.Restart that POSTs an empty body to url (an
// operator's hook, e.g. an orchestrator's restart endpoint), with the
// Env's HTTP client. Any 2xx answer is success; the server may be back
// before or after it, protocol/reconnect waits for that.
func RestartURL(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		if err != nil {
			return fmt.Errorf("the restart URL: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("the restart URL: %w", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("the restart URL %s answered HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(excerpt(b, 300)))
		}
		return nil
	}
}

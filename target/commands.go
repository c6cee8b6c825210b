package target

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// RemoteCommands are the operator's commands that let the simulator draw
// the restart faults against a server it did not start. Each runs with
// sh -c and must return once its restart is done (or under way); the
// target then waits until GET /healthz answers 200.
type RemoteCommands struct {
	// RestartInstance kills and restarts the server instance (its
	// sockets drop), as the embedded target's instance restart does. It
	// gets the instance's index and URL in $KBKIT_INSTANCE and
	// $KBKIT_INSTANCE_URL.
	RestartInstance string
	// RestartPostgres restarts the server's database.
	RestartPostgres string
	// Timeout bounds one command and the wait for /healthz after it
	// (default 2 minutes).
	Timeout time.Duration
}

// RemoteWith is Remote whose restart faults run the operator's commands;
// an empty command leaves that fault undrawn.
func RemoteWith(url string, tokens []string, c RemoteCommands) Target {
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	r := commandedPG{remote: remote{url: url, tokens: tokens}, cmds: c}
	if c.RestartInstance == "" {
		return r // no RestartInstance method: instance restarts are not drawn
	}
	return commanded{r}
}

// commandedPG is a remote target with the operator's commands, without
// instance restarts; commanded adds them.
type commandedPG struct {
	remote
	cmds RemoteCommands
}

type commanded struct{ commandedPG }

// RestartInstance runs the instance restart command.
func (c commanded) RestartInstance(ctx context.Context, i int) error {
	return c.run(ctx, "--restart-command", c.cmds.RestartInstance, "KBKIT_INSTANCE="+strconv.Itoa(i), "KBKIT_INSTANCE_URL="+c.url)
}

// CanRestartPostgres reports whether a Postgres restart command was given.
func (c commandedPG) CanRestartPostgres() bool { return c.cmds.RestartPostgres != "" }

// RestartPostgres runs the Postgres restart command.
func (c commandedPG) RestartPostgres(ctx context.Context) error {
	return c.run(ctx, "--postgres-restart-command", c.cmds.RestartPostgres)
}

// run runs one command (killed if it outlives the timeout) and waits for
// the server's health.
func (c commandedPG) run(ctx context.Context, flag, command string, env ...string) error {
	if command == "" {
		return fmt.Errorf("%s is not set", flag)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cmds.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %q: %v: %s", flag, command, err, strings.TrimSpace(string(out)))
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.url, "/")+"/healthz", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %q: the server at %s is not healthy %s later", flag, command, c.url, c.cmds.Timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

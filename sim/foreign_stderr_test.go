package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/subspace/kbkit/internal/syncio"
)

// A client adapter's stderr reaches Options.ClientStderr line by line,
// each line prefixed with its window and seed (spec/ADAPTER.md section
// 1): several clients and seeds write to one stderr.
func TestForeignClientStderrPrefix(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	var stderr syncio.Buffer
	script := `echo hello from the client >&2; echo second line >&2; read l; ` +
		`echo '{"type":"init_ok","in_reply_to":1,"suites":["commands"]}'; cat >/dev/null`
	r := RunSeed(context.Background(), e, Options{Windows: 1, Others: -1, Clients: []string{"sh -c " + shellQuote(script)}, Steps: 5, ClientStderr: &stderr}, 3)
	if !strings.Contains(r.Err, "cannot run") {
		t.Errorf("err %q, want the client to be refused (it lists no client suite)", r.Err)
	}
	for _, want := range []string{"[client w1 seed 3] hello from the client\n", "[client w1 seed 3] second line\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the client's stderr does not hold %q:\n%s", want, stderr.String())
		}
	}
}

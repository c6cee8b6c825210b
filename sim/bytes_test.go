package sim

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/subspace/kbkit/server/pgprovider"
)

// The simulator's text meets the byte rules of canonical JSON: after a
// few seeds the server's log holds '<', '>', '&', U+2028, non-BMP text and
// control characters (so the projection checker compared kb.page's bytes
// with them in), and the seeds pass.
func TestSimulatorTextMeetsByteRules(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	e, err := NewEmbedded(context.Background(), dsn, EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	Run(t, e, Options{Seed: 40, Seeds: 3, Steps: 150})
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, c := range []struct{ what, re string }{
		{"'<', '>' or '&'", "[<>&]"}, {"U+2028 or U+2029", "[\u2028\u2029]"}, {"a non-BMP character", "[\U00010000-\U0010FFFF]"},
		{"a combining mark or right-to-left text", "[\u0300-\u036f\u0590-\u05ff\u202e]"},
		{"an escaped control character", `\\(u00[01]|[btnfr])`}, {"a quote or a backslash", `\\["\\]`},
	} {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM command_log WHERE payload::text ~ $1`, c.re).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("no logged payload holds %s", c.what)
		}
	}
}

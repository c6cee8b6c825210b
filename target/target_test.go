package target

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// Tokens of two workspaces are refused up front, naming both workspaces
// (kb.whoami's name) as well as their ids; a bad URL never gets a request.
func TestPreflightNamesWorkspaces(t *testing.T) {
	ctx := context.Background()
	dsn := pgprovider.ForTest(t)
	e, err := NewEmbedded(ctx, dsn, EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dev, err := st.PairDevice(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	acme, err := st.PairDevice(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	url := e.Endpoints()[0]
	err = Preflight(ctx, Remote(url, []string{dev.Token, acme.Token}))
	want := `token 2 is a device of workspace "acme" (` + acme.WorkspaceID + `), token 1 of workspace "dev" (` + dev.WorkspaceID + `)`
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), want) {
		t.Errorf("two workspaces: %v, want %q", err, want)
	}
	if err := Preflight(ctx, Remote(url, []string{dev.Token, dev.Token})); err != nil {
		t.Errorf("one workspace: %v", err)
	}
	err = Preflight(ctx, Remote(strings.TrimPrefix(url, "http://"), []string{dev.Token}))
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "has no scheme: did you mean http://") {
		t.Errorf("no scheme: %v", err)
	}
}

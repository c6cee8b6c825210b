package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
)

// chooser makes every random decision of a seed and records it as a
// choice: a small non-negative integer whose 0 is the simplest value (no
// fault, the first window, the first kind of step). A seed's run is a pure
// function of its choices (and the server's answers), as in Hypothesis: a
// run replays from a recorded list, and a list cut short or altered still
// yields a run the scheduler could have drawn (a choice past the end is 0;
// one out of range is taken modulo the range), which is what the shrinker
// (shrink.go) relies on.
//
// Drawn from the seed (replay nil), each decision consumes the PRNG
// exactly as the scheduler always did, so every seed draws what it drew
// before choices were recorded.
type chooser struct {
	rng    *mrand.Rand
	replay []int // the choices to replay (nil: draw from rng)
	pos    int
	rec    []int // every choice made, in order
	marks  []int // where each scheduler step's choices begin in rec
}

func newChooser(seed int64, replay []int) *chooser {
	return &chooser{rng: mrand.New(mrand.NewPCG(uint64(seed), 0x6b626b6974)), replay: replay}
}

// next is the next recorded choice in [0, n), or -1 when drawing.
func (c *chooser) next(n int) int {
	if c.replay == nil {
		return -1
	}
	v := 0
	if c.pos < len(c.replay) {
		v = c.replay[c.pos]
	}
	c.pos++
	if v < 0 {
		v = -v
	}
	return v % n
}

// IntN is a choice in [0, n); n must be positive.
func (c *chooser) IntN(n int) int {
	v := c.next(n)
	if v < 0 {
		v = c.rng.IntN(n)
	}
	c.rec = append(c.rec, v)
	return v
}

// OneIn is true one time in n: the rare branch, choice 1 (the simplest,
// 0, is the common branch).
func (c *chooser) OneIn(n int) bool {
	v := c.next(2)
	if v < 0 {
		v = 0
		if c.rng.IntN(n) == 0 {
			v = 1
		}
	}
	c.rec = append(c.rec, v)
	return v == 1
}

// Chance is true with probability p (choice 1); a p of 0 makes no choice.
func (c *chooser) Chance(p float64) bool {
	if p <= 0 {
		return false
	}
	v := c.next(2)
	if v < 0 {
		v = 0
		if c.rng.Float64() < p {
			v = 1
		}
	}
	c.rec = append(c.rec, v)
	return v == 1
}

// Float64 is a choice in [0, 1), recorded as a multiple of 2^-53.
func (c *chooser) Float64() float64 {
	const scale = 1 << 53
	v := c.next(scale)
	if v < 0 {
		f := c.rng.Float64()
		c.rec = append(c.rec, int(f*scale))
		return f
	}
	c.rec = append(c.rec, v)
	return float64(v) / scale
}

// mark notes that a scheduler step begins.
func (c *chooser) mark() { c.marks = append(c.marks, len(c.rec)) }

// Choices returns a copy of the choices made so far.
func (c *chooser) Choices() []int { return append([]int(nil), c.rec...) }

// ChoiceFile is the file --choices reads: the choices of one seed's run,
// with the options they were made under (for the reader; the command line
// gives the options).
type ChoiceFile struct {
	Seed    int64 `json:"seed"`
	Steps   int   `json:"steps"`
	Windows int   `json:"windows"`
	Pages   int   `json:"pages"`
	Devices int   `json:"devices"`
	Faults  bool  `json:"faults"`
	Choices []int `json:"choices"`
}

// WriteChoices writes the choices of a seed run under opts to path, a
// file that must not exist: a choice file is never overwritten, since a
// replay line printed earlier names it (an error wrapping fs.ErrExist).
func WriteChoices(path string, opts Options, seed int64, choices []int) error {
	b, err := choiceFile(opts, seed, choices)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeNew(path, b)
}

// WriteChoicesIn writes the choices of a seed run under opts into dir as
// name.choices.json, or, if a file of that name exists (another run's),
// name-2.choices.json, name-3..., and returns the path written: two runs
// writing into one directory never replace each other's files.
func WriteChoicesIn(dir, name string, opts Options, seed int64, choices []int) (string, error) {
	b, err := choiceFile(opts, seed, choices)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		path := filepath.Join(dir, name+".choices.json")
		if i > 1 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.choices.json", name, i))
		}
		err := writeNew(path, b)
		if !errors.Is(err, fs.ErrExist) {
			return path, err
		}
	}
}

func choiceFile(opts Options, seed int64, choices []int) ([]byte, error) {
	opts.defaults()
	b, err := json.Marshal(ChoiceFile{Seed: seed, Steps: opts.Steps, Windows: opts.Windows, Pages: opts.Pages,
		Devices: opts.Devices, Faults: opts.Faults, Choices: choices})
	return append(b, '\n'), err
}

// writeNew writes b to path, which it creates (fs.ErrExist if it exists).
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// ReadChoices reads a file WriteChoices wrote. An empty list is an error:
// replaying no choices would silently run the simplest history instead.
func ReadChoices(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f ChoiceFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: not a choice file: %v", path, err)
	}
	if len(f.Choices) == 0 {
		return nil, fmt.Errorf("%s: no choices", path)
	}
	for i, v := range f.Choices {
		if v < 0 {
			return nil, fmt.Errorf("%s: choice %d is negative (%d)", path, i, v)
		}
	}
	return f.Choices, nil
}

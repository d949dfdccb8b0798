package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// docCommand is one drover command line shown in a doc.
type docCommand struct {
	where string   // file:line
	args  []string // after "drover"
	err   string   // the error the doc shows after it ("drover: ..."), if any
}

// docCommands extracts the drover command lines of README.md and
// docs/*.md: lines of code blocks (fenced or indented) that start with
// "drover", "$ drover", "go run ./cmd/drover" or "/usr/bin/time drover"
// (in a fenced block with "$ " prompts, only the prompted lines: the rest
// is output), and first cells of tables that hold a backticked drover
// command naming an --experiment (other cells name flags). A trailing
// "# comment" is dropped; a next line starting with "drover: " is the
// error the doc shows for it.
func docCommands(root string) ([]docCommand, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docCommand
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(b), "\n")
		fenced, prompted := false, false
		for i, l := range lines {
			trim := strings.TrimSpace(l)
			if strings.HasPrefix(trim, "```") {
				fenced = !fenced
				prompted = false
				for _, next := range lines[i+1:] {
					if strings.HasPrefix(strings.TrimSpace(next), "```") || !fenced {
						break
					}
					prompted = prompted || strings.HasPrefix(strings.TrimSpace(next), "$ ")
				}
				continue
			}
			var cmd string
			switch {
			case fenced && prompted && !strings.HasPrefix(trim, "$ "):
				continue
			case fenced || strings.HasPrefix(l, "    "):
				cmd = trim
			case strings.HasPrefix(l, "| `drover ") && strings.Contains(strings.Split(l, "|")[1], "--experiment"):
				cmd, _, _ = strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			default:
				continue
			}
			cmd = strings.TrimPrefix(cmd, "$ ")
			cmd = strings.TrimPrefix(cmd, "/usr/bin/time ")
			cmd = strings.TrimPrefix(cmd, "go run ./cmd/")
			if !strings.HasPrefix(cmd, "drover ") && cmd != "drover" {
				continue
			}
			if c, _, ok := strings.Cut(cmd, " #"); ok {
				cmd = c
			}
			args, err := shellWords(strings.TrimPrefix(cmd, "drover"))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
			}
			dc := docCommand{where: fmt.Sprintf("%s:%d", filepath.Base(file), i+1), args: args}
			if i+1 < len(lines) {
				dc.err, _ = strings.CutPrefix(strings.TrimSpace(lines[i+1]), "drover: ")
				if dc.err == strings.TrimSpace(lines[i+1]) {
					dc.err = ""
				}
			}
			out = append(out, dc)
		}
	}
	return out, nil
}

// shellWords splits s at blanks, honouring single and double quotes.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\' || c == '|' || c == '&' || c == ';' || c == '>' || c == '<':
			return nil, fmt.Errorf("%q: shell syntax %q is not a plain command line", s, c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// TestDocCommands runs every drover command line shown in README.md and
// docs/*.md (issue 28 item 6) in its --quick form and asserts it succeeds
// with output, or, where the doc shows the error it prints, fails with
// exactly that error. The rules (docs/simulator.md, "Commands in the
// docs"):
//   - scheduler, queue, report and dev-cluster need a Kubernetes API
//     server and are not run here (pkg/k8s/e2e runs them);
//   - sim and forecast get --quick appended (a doc line without it is the
//     full run, whose time the doc states; --quick must run in seconds);
//   - --out goes to a temporary directory;
//   - the input files the docs use as examples (jobs.csv, gpu-jobs.csv,
//     counts.csv) are small fixtures; a line naming any other file that is
//     not in the repository is reported as skipped.
//
// In -short mode only the error examples and the commands under 1 s run.
func TestDocCommands(t *testing.T) {
	root := "../.."
	cmds, err := docCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 40 {
		t.Fatalf("found %d doc commands, want the 40 or more the docs show", len(cmds))
	}
	dir := t.TempDir()
	fixtures := map[string]string{
		"jobs.csv":     "submit_s,duration_s,gpu,cpu,mem_gib,class\n0,600,1,4,16,TE\n10,3600,8,16,64,BE\n20,1200,2,8,32,BE\n30,300,1,2,8,TE\n",
		"gpu-jobs.csv": "submit_s,duration_s,gpu\n0,100,1\n1,100,2\n2,100,4\n3,100,8\n",
		"counts.csv":   "time,a,b\n" + seriesAB(22*24*12), // 3 weeks for the --quick span, a day more to test on
	}
	for name, body := range fixtures {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, dc := range cmds {
		if len(dc.args) == 0 || slices.Contains([]string{"scheduler", "queue", "report", "dev-cluster"}, dc.args[0]) {
			continue
		}
		args, skip := docArgs(dc.args, root, dir)
		key := strings.Join(args, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Run(dc.where+" "+strings.Join(dc.args, " "), func(t *testing.T) {
			if skip != "" {
				t.Skip(skip)
			}
			if testing.Short() && dc.err == "" && !slices.Contains(args, "--list") {
				t.Skip("-short: only the error examples run")
			}
			start := time.Now()
			out, err := drover(t, args...)
			took := time.Since(start)
			if dc.err != "" {
				if err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(dc.err, "…")) {
					t.Errorf("drover %s:\nerror %v\nthe doc shows %q", strings.Join(args, " "), err, dc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("drover %s: %v", strings.Join(args, " "), err)
			}
			if strings.TrimSpace(out) == "" {
				t.Errorf("drover %s printed nothing", strings.Join(args, " "))
			}
			t.Logf("drover %s: %.1f s", strings.Join(args, " "), took.Seconds())
		})
	}
}

// docArgs rewrites a doc command's arguments to run here: --quick added
// to sim and forecast, --out into dir, input files into the repository or
// the fixtures in dir. skip says why it cannot run ("" if it can).
func docArgs(in []string, root, dir string) (args []string, skip string) {
	args = slices.Clone(in)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--out":
			args[i+1] = filepath.Join(dir, "out", strings.ReplaceAll(args[i+1], "/", "_"))
		case "--trace", "--series", "--philly", "--profile", "--config":
			p := args[i+1]
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil && !strings.Contains(p, "/") {
				args[i+1] = filepath.Join(dir, p)
			} else if _, err := os.Stat(filepath.Join(root, p)); err == nil {
				args[i+1] = filepath.Join(root, p)
			} else if !errors.Is(err, os.ErrNotExist) {
				return args, err.Error()
			} else {
				return args, fmt.Sprintf("%s %s: an example file that is neither in the repository nor a fixture", args[i], p)
			}
		}
	}
	if (args[0] == "sim" || args[0] == "forecast") && !slices.Contains(args, "--quick") && !slices.Contains(args, "--list") {
		args = append(args, "--quick")
	}
	return args, ""
}

// seriesAB returns n rows of a 5-minute series of two buckets with a
// daily wave, without the header.
func seriesAB(n int) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	for i := range n {
		fmt.Fprintf(w, "%d,%d,%d\n", i*300, 5+(i/12)%24, 2+(i/36)%8)
	}
	w.Flush()
	return b.String()
}

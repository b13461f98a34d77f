// Command mutate runs hubsync's mutation tests: it applies each mutation of a
// list, one at a time, to a temporary copy of the source tree (never the working
// tree), runs the tests of the packages the mutation names with CI set and a
// timeout, and reports each mutant killed (a test failed, or the build broke) or
// survived (every test passed), and the score.
//
//	go run ./internal/mutate                      # every mutation of .ci/mutations.txt
//	go run ./internal/mutate -only 'pg-|budget'   # those whose name matches
//	go run ./internal/mutate -md MUTATION.md      # also write the results as Markdown
//	go run ./internal/mutate -n                   # only check that every mutation applies
//
// It needs the databases the tests need (CI is set, so an unreachable
// PostgreSQL or MariaDB fails a test and would count as killing the mutant:
// start them first, as .ci/run does). It is slow (each mutant runs its packages'
// tests), so it is not part of the regular CI run.
//
// The list's format: one block per mutation, separated by lines "=== NAME";
// header lines "file: PATH", "packages: ./a ./b/...", optionally "run: REGEXP"
// (go test -run) and "why: TEXT"; then the exact original text between "<<<"
// and "===>" and its replacement between "===>" and ">>>". The original must
// occur exactly once in the file. Lines starting with "#" outside a block are
// comments.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// mutation is one small bug to introduce.
type mutation struct {
	Name     string
	File     string
	Packages []string
	Run      string
	Why      string
	Original string
	Replace  string
}

// result is what running the tests against one mutant showed.
type result struct {
	mutation
	Killed  bool
	Reason  string   // "tests failed", "build failed", "timeout", or "survived"
	By      []string // the failing tests, deepest first, at most 3
	Elapsed time.Duration
}

func main() {
	list := flag.String("list", ".ci/mutations.txt", "the mutation list")
	only := flag.String("only", "", "run only the mutations whose name matches this regular expression")
	timeout := flag.Duration("timeout", 6*time.Minute, "test timeout per mutant (go test -timeout); a timeout counts as killed")
	md := flag.String("md", "", "write the results as a Markdown table to this file")
	verbose := flag.Bool("v", false, "print the test output of every mutant, not only of survivors")
	check := flag.Bool("n", false, "only check that every mutation applies, and list them")
	flag.Parse()
	if err := run(*list, *only, *timeout, *md, *verbose, *check); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
}

func run(listPath, only string, timeout time.Duration, mdPath string, verbose, check bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(root, listPath))
	if err != nil {
		return err
	}
	muts, err := parse(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", listPath, err)
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return err
		}
		var keep []mutation
		for _, m := range muts {
			if re.MatchString(m.Name) {
				keep = append(keep, m)
			}
		}
		muts = keep
	}
	if len(muts) == 0 {
		return errors.New("no mutations to run")
	}
	// Check every mutation applies before spending time on tests.
	for _, m := range muts {
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if n := bytes.Count(src, []byte(m.Original)); n != 1 {
			return fmt.Errorf("%s: the original text occurs %d times in %s, want exactly once", m.Name, n, m.File)
		}
	}
	if check {
		for _, m := range muts {
			fmt.Printf("%-45s %s\n", m.Name, m.File)
		}
		fmt.Printf("mutate: %d mutations apply\n", len(muts))
		return nil
	}
	tmp, err := os.MkdirTemp("", "hubsync-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(root, tmp); err != nil {
		return fmt.Errorf("copy the tree: %w", err)
	}
	fmt.Printf("mutate: %d mutations on a copy of %s in %s\n", len(muts), root, tmp)
	var results []result
	for i, m := range muts {
		r, out, err := runOne(tmp, m, timeout)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		results = append(results, r)
		fmt.Printf("[%d/%d] %-40s %-8s %s (%s) %s\n", i+1, len(muts), m.Name, verdict(r), r.Reason, r.Elapsed.Round(time.Second), strings.Join(r.By, " "))
		if !r.Killed || verbose {
			fmt.Printf("%s\n", indent(out))
		}
	}
	killed := 0
	var survivors []string
	for _, r := range results {
		if r.Killed {
			killed++
		} else {
			survivors = append(survivors, r.Name)
		}
	}
	fmt.Printf("mutate: %d of %d mutants killed (%.1f%%)\n", killed, len(results), 100*float64(killed)/float64(len(results)))
	if len(survivors) > 0 {
		fmt.Printf("mutate: survivors: %s\n", strings.Join(survivors, ", "))
	}
	if mdPath != "" {
		if !filepath.IsAbs(mdPath) {
			mdPath = filepath.Join(root, mdPath)
		}
		if err := os.WriteFile(mdPath, markdown(results), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func verdict(r result) string {
	if r.Killed {
		return "killed"
	}
	return "SURVIVED"
}

// runOne applies m in the copy at dir, runs its packages' tests and restores the
// file.
func runOne(dir string, m mutation, timeout time.Duration) (result, string, error) {
	path := filepath.Join(dir, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return result{}, "", err
	}
	mutated := bytes.Replace(orig, []byte(m.Original), []byte(m.Replace), 1)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return result{}, "", err
	}
	defer os.WriteFile(path, orig, 0o644)

	args := []string{"test", "-count=1", "-timeout", timeout.String()}
	if m.Run != "" {
		args = append(args, "-run", m.Run)
	}
	args = append(args, m.Packages...)
	// The go test timeout panics the test binary; the context is a backstop
	// for a build or a process that does not end.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := result{mutation: m, Elapsed: time.Since(start)}
	switch {
	case err == nil:
		r.Reason = "survived"
	case ctx.Err() != nil || bytes.Contains(out, []byte("panic: test timed out")):
		r.Killed, r.Reason = true, "timeout"
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		r.Killed, r.Reason = true, "build failed"
	default:
		r.Killed, r.Reason = true, "tests failed"
		r.By = failedTests(out, 3)
	}
	return r, failures(out), nil
}

// failedTests returns up to n names of failed tests, the most specific
// (subtests) first, so that a kill can be checked against what it meant to
// catch.
func failedTests(out []byte, n int) []string {
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	var leaves []string
	for i, a := range names {
		leaf := true
		for _, b := range names[i+1:] {
			if strings.HasPrefix(b, a+"/") {
				leaf = false
			}
		}
		if leaf {
			leaves = append(leaves, a)
		}
	}
	if len(leaves) > n {
		leaves = leaves[:n]
	}
	return leaves
}

// failures keeps the lines of go test output that say what failed.
func failures(out []byte) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "FAIL") || strings.HasPrefix(t, "ok ") || strings.Contains(t, ".go:") {
			keep = append(keep, l)
		}
		if len(keep) >= 40 {
			break
		}
	}
	return strings.Join(keep, "\n")
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func markdown(results []result) []byte {
	var b bytes.Buffer
	killed := 0
	for _, r := range results {
		if r.Killed {
			killed++
		}
	}
	fmt.Fprintf(&b, "| mutant | file | result | killed by | what it breaks |\n|---|---|---|---|---|\n")
	for _, r := range results {
		v := "killed (" + r.Reason + ")"
		if !r.Killed {
			v = "**survived**"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", r.Name, r.File, v, strings.Join(r.By, "<br>"), r.Why)
	}
	fmt.Fprintf(&b, "\nScore: %d of %d mutants killed (%.1f%%).\n", killed, len(results), 100*float64(killed)/float64(len(results)))
	return b.Bytes()
}

// parse reads a mutation list.
func parse(r io.Reader) ([]mutation, error) {
	var (
		out  []mutation
		cur  *mutation
		mode string // "", "orig", "repl"
		buf  []string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case mode == "orig" && l == "===>":
			cur.Original = strings.Join(buf, "\n")
			buf, mode = nil, "repl"
		case mode == "repl" && l == ">>>":
			cur.Replace = strings.Join(buf, "\n")
			buf, mode = nil, ""
			out = append(out, *cur)
			cur = nil
		case mode != "":
			buf = append(buf, l)
		case strings.HasPrefix(l, "=== "):
			cur = &mutation{Name: strings.TrimSpace(strings.TrimPrefix(l, "=== "))}
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q outside a mutation block", line, l)
		case l == "<<<":
			if cur.File == "" || len(cur.Packages) == 0 {
				return nil, fmt.Errorf("line %d: mutation %s has no file or packages", line, cur.Name)
			}
			mode = "orig"
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want KEY: VALUE, got %q", line, l)
			}
			v = strings.TrimSpace(v)
			switch k {
			case "file":
				cur.File = v
			case "packages":
				cur.Packages = strings.Fields(v)
			case "run":
				cur.Run = v
			case "why":
				cur.Why = v
			default:
				return nil, fmt.Errorf("line %d: unknown key %q", line, k)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil || mode != "" {
		return nil, errors.New("the last mutation block is not closed with >>>")
	}
	return out, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the hubsync module")
	}
	return filepath.Dir(mod), nil
}

// copyTree copies the source tree at src to dst, without .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	list := `# a comment
=== one
why: a reason
file: a/b.go
packages: ./a ./b/...
run: ^TestX$
<<<
	if x {
		y()
===>
	if !x {
>>>

=== two
file: c.sql
packages: ./c
<<<
A
===>
>>>
`
	muts, err := parse(strings.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 2 {
		t.Fatalf("parsed %d mutations, want 2: %+v", len(muts), muts)
	}
	m := muts[0]
	if m.Name != "one" || m.File != "a/b.go" || strings.Join(m.Packages, " ") != "./a ./b/..." || m.Run != "^TestX$" || m.Why != "a reason" ||
		m.Original != "\tif x {\n\t\ty()" || m.Replace != "\tif !x {" {
		t.Errorf("first mutation = %+v", m)
	}
	if muts[1].Original != "A" || muts[1].Replace != "" {
		t.Errorf("second mutation = %+v", muts[1])
	}
	for _, bad := range []string{
		"stray line\n",
		"=== x\nfile: f\n<<<\na\n===>\nb\n>>>\n",           // no packages
		"=== x\nfile: f\npackages: ./p\n<<<\na\n===>\nb\n", // not closed
		"=== x\nsize: 3\n",
	} {
		if _, err := parse(strings.NewReader(bad)); err == nil {
			t.Errorf("parse(%q) succeeded, want an error", bad)
		}
	}
}

func TestFailedTests(t *testing.T) {
	out := []byte(`--- FAIL: TestA (0.00s)
    --- FAIL: TestA/sqlite (0.01s)
        x_test.go:1: boom
--- FAIL: TestB (0.00s)
FAIL
`)
	got := failedTests(out, 3)
	if strings.Join(got, ",") != "TestA/sqlite,TestB" {
		t.Fatalf("failedTests = %v, want the leaves TestA/sqlite and TestB", got)
	}
}

package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/lenspec/lenspec/results"
)

// MergeReport says what Merge did.
type MergeReport struct {
	Kind    string `json:"kind"` // "attack", "text-attack" or "verify"
	Records int    `json:"records"`
	// Duplicates counts records not written as copies of a unit's result
	// kept; Resolved the conflicts Conflict Best decided; Replaced the
	// records written in place of a worse one out held.
	Duplicates int    `json:"duplicates"`
	Resolved   int    `json:"resolved"`
	Replaced   int    `json:"replaced"`
	Out        string `json:"out"`
}

// Merge joins the results files inputs — the shards of one run — into out
// (created, or extended if it exists) by Join's rules: one experiment,
// each unit once, records of one unit that disagree refused (or, with
// Conflict Best, the better kept, replacing out's record if it must). The
// result does not depend on the order of inputs.
func Merge(out string, inputs []string, opt JoinOptions) (*MergeReport, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: no input files")
	}
	kind := ""
	for _, p := range inputs {
		k, err := FileKind(p)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if k == "" {
			continue // empty
		}
		if kind != "" && k != kind {
			return nil, fmt.Errorf("merge: %s holds %s records, the others %s records", p, k, kind)
		}
		kind = k
	}
	if kind == "" {
		return nil, errors.New("merge: the input files hold no records")
	}
	if kind == exhaustKind {
		return nil, errNoExhaust("merge")
	}
	paths := inputs
	if _, err := os.Stat(out); err == nil {
		paths = append([]string{out}, inputs...)
	}
	var rep *MergeReport
	var err error
	if kind == "verify" {
		rep, err = merge[VerifyRecord](kind, out, paths, opt)
	} else {
		rep, err = merge[AttackRecord](kind, out, paths, opt)
	}
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return rep, nil
}

// FileKind tells image attack ("attack"), text attack ("text-attack") and
// verification ("verify") results files apart by their first record; ""
// for a file with no records.
func FileKind(path string) (string, error) {
	first, ok, err := results.First[map[string]json.RawMessage](path)
	if err != nil || !ok {
		return "", err
	}
	if string(first["kind"]) == `"`+exhaustKind+`"` {
		return exhaustKind, nil // before verdict, which a translator's verify record has too
	}
	if _, ok := first["verdict"]; ok {
		return "verify", nil
	}
	// A text record has its source's ids, or, redacted (a corpus whose
	// text may not be copied), its length: an image record has neither.
	for _, k := range []string{"src_ids", "src_len", "redacted"} {
		if _, ok := first[k]; ok {
			return "text-attack", nil
		}
	}
	if _, ok := first["method"]; ok {
		return "attack", nil
	}
	return "", fmt.Errorf("%s: record 1 is neither an attack nor a verification record", path)
}

// kindKeys are the record keys of each kind FileKind names.
var kindKeys = map[string]func(json.RawMessage) (string, error){"attack": attackKey, "text-attack": attackKey, "verify": verifyKey, exhaustKind: exhaustKey}

// merge merges paths, records of the kind FileKind names, into out.
func merge[R Record](kind, out string, paths []string, opt JoinOptions) (*MergeReport, error) {
	ops := opsFor[R]()
	j, items, err := joinFiles[R](paths, map[string]bool{out: true}, nil, opt)
	if err != nil {
		return nil, err
	}
	rep := &MergeReport{Kind: kind, Out: out, Duplicates: j.Duplicates, Resolved: j.Resolved}
	// A key whose records in out are not exactly the one kept (a worse
	// record Best replaces, a second copy) loses them first.
	inOut := map[string]int{}
	for _, it := range items {
		if it.at.pinned {
			inOut[ops.key(it.r)]++
		}
	}
	redo := map[string]bool{}
	for i, r := range j.Records {
		k := ops.key(r)
		if n := inOut[k]; n > 1 || n == 1 && !j.from[i].pinned {
			redo[k] = true
		}
	}
	keyOf := func(raw json.RawMessage) (string, error) {
		r, err := ops.decode(raw)
		if err != nil {
			return "", err
		}
		return ops.key(r), nil
	}
	if len(redo) > 0 {
		if _, err := results.Drop(out, keyOf, func(raw json.RawMessage) bool {
			k, err := keyOf(raw)
			return err == nil && redo[k]
		}); err != nil {
			return nil, err
		}
	}
	f, err := results.Open(out, keyOf)
	if err != nil {
		return nil, err
	}
	for i, r := range j.Records {
		k := ops.key(r)
		if f.Done(k) {
			continue
		}
		if err := f.Append(k, r); err != nil {
			f.Close()
			return nil, err
		}
		rep.Records++
		if inOut[k] > 0 && !j.from[i].pinned {
			rep.Replaced++
		}
	}
	return rep, f.Close()
}

// errNoExhaust is what merge and summary say of a translator's exact
// one-substitution search records, which they do not read yet: the
// records are JSONL, a sentence each, and results check replays them.
func errNoExhaust(what string) error {
	return fmt.Errorf("%s: these are a translator's one-substitution search records (lenspec bound/verify on a translator), which %s does not read yet; they are JSONL, one sentence a record", what, what)
}

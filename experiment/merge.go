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
	Kind       string `json:"kind"` // "attack", "text-attack" or "verify"
	Records    int    `json:"records"`
	Duplicates int    `json:"duplicates"`
	Out        string `json:"out"`
}

// Merge joins the results files inputs — the shards of one run — into out
// (created, or extended if it exists), each unit once. It refuses files of
// different kinds and records of different experiments: another model,
// data set, or settings (per method, for attacks), since a summary of the
// merged file would silently mix them. A unit present in several files is
// written once (the first); the report counts the others.
func Merge(out string, inputs []string) (*MergeReport, error) {
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
	paths := inputs
	if _, err := os.Stat(out); err == nil {
		paths = append([]string{out}, inputs...)
	}
	switch kind {
	case "text-attack":
		// A method's settings may differ by δ within one run (the paper's
		// random search: 10,000 samples at δ = 1, 800 below), not at one δ.
		return merge(out, paths, kind, decodeTextAttack, TextAttackKey, func(r TextAttackRecord) (string, string) {
			return fmt.Sprintf("%s@%g", r.Method, r.Eps), identity(r.ModelSHA256, r.Data, r.Settings)
		})
	case "verify":
		return merge(out, paths, kind, decodeVerify, VerifyKey, func(r VerifyRecord) (string, string) {
			return "", identity(r.ModelSHA256, r.Data, r.Settings)
		})
	default:
		return merge(out, paths, kind, decodeAttack, AttackKey, func(r AttackRecord) (string, string) {
			return r.Method, identity(r.ModelSHA256, r.Data, r.Settings)
		})
	}
}

// identity is what all records of one experiment share, as text.
func identity(digest string, d DataRef, settings any) string {
	b, _ := json.Marshal(struct {
		M string
		D DataRef
		S any
	}{digest, d, settings})
	return string(b)
}

// FileKind tells image attack ("attack"), text attack ("text-attack") and
// verification ("verify") results files apart by their first record; ""
// for a file with no records.
func FileKind(path string) (string, error) {
	first, ok, err := results.First[map[string]json.RawMessage](path)
	if err != nil || !ok {
		return "", err
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
var kindKeys = map[string]func(json.RawMessage) (string, error){"attack": attackKey, "text-attack": textAttackKey, "verify": verifyKey}

func merge[R any](out string, paths []string, kind string, dec func(json.RawMessage) (R, error), key func(R) string, ident func(R) (group, id string)) (*MergeReport, error) {
	var recs []R
	seen := map[string]string{} // group → identity
	first := map[string]string{}
	for _, p := range paths {
		rs, err := readRecords(p, dec)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if p == out {
			for _, r := range rs {
				g, id := ident(r)
				seen[g], first[g] = id, p
			}
			continue // already in out
		}
		for _, r := range rs {
			g, id := ident(r)
			if prev, ok := seen[g]; ok && prev != id {
				return nil, fmt.Errorf("merge: %s holds records of another experiment than %s (model, data or settings differ); merge only the shards of one run", p, first[g])
			}
			seen[g], first[g] = id, p
			recs = append(recs, r)
		}
	}
	f, err := results.Open(out, func(raw json.RawMessage) (string, error) {
		r, err := dec(raw)
		if err != nil {
			return "", err
		}
		return key(r), nil
	})
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	rep := &MergeReport{Kind: kind, Out: out}
	for _, r := range recs {
		k := key(r)
		if f.Done(k) {
			rep.Duplicates++
			continue
		}
		if err := f.Append(k, r); err != nil {
			f.Close()
			return nil, fmt.Errorf("merge: %w", err)
		}
		rep.Records++
	}
	return rep, f.Close()
}

func decodeTextAttack(raw json.RawMessage) (TextAttackRecord, error) {
	var r TextAttackRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, err
	}
	if r.SchemaVersion != SchemaVersion {
		return r, fmt.Errorf("text attack record of schema version %d; this lenspec reads %d", r.SchemaVersion, SchemaVersion)
	}
	if r.SrcLen == 0 { // written before src_len
		r.SrcLen = len(r.SrcIDs)
	}
	return r, nil
}

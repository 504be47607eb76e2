package experiment

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackRecordLine: each kind of record (an image's, a sentence's, a
// redacted sentence's, an embedding attack's, a failure) in the words
// lenspec attack prints.
func TestAttackRecordLine(t *testing.T) {
	img := AttackRecord{Sample: 3, Eps: 0.05, Method: "pgd", AttackImage: &AttackImage{}, K: 4, OrigLength: 4, AdvLength: 9,
		Stopped: true, Success: true, MinRelMargin: 0.0123, Evals: 50, Seconds: 1.26}
	capped := img
	capped.Stopped, capped.AdvLength, capped.Success = false, 20, true
	text := AttackRecord{Sample: 1, Eps: 0.5, Method: "flip", AttackText: &AttackText{AdvText: "Das Haus."}, K: 5, OrigLength: 5, AdvLength: 5,
		Stopped: true, Evals: 300, Seconds: 2}
	redacted := text
	redacted.AttackText = &AttackText{Redacted: true, AdvSubs: [][2]int{{0, 7}}, SrcLen: 6}
	redacted.Data.Split = "test"
	emb := text
	emb.Method, emb.AttackText, emb.Witness = "embedding", &AttackText{}, "w.safetensors"
	failed := img
	failed.Error = "solver: boom"
	for _, tc := range []struct {
		r    AttackRecord
		want string
	}{
		{img, "image 3 eps 0.05 pgd: length 4 → 9 (K̂ 4) LENGTHENED, margin 0.012, 50 evals, 1.3s"},
		{capped, "image 3 eps 0.05 pgd: length 4 → ≥20 (no eos) (K̂ 4) LENGTHENED, margin 0.012, 50 evals, 1.3s"},
		{text, `sentence 1 eps 0.5 flip: length 5 → 5 (K̂ 5) not lengthened, 300 evals, 2.0s: "Das Haus."`},
		{redacted, `sentence 1 eps 0.5 flip: length 5 → 5 (K̂ 5) not lengthened, 300 evals, 2.0s: "(test sentence 1 with 1 of its 6 tokens substituted; positions and ids in the record)"`},
		{emb, `sentence 1 eps 0.5 embedding: length 5 → 5 (K̂ 5) not lengthened, 300 evals, 2.0s: "(embeddings: w.safetensors)"`},
		{failed, "image 3 eps 0.05 pgd: FAILED: solver: boom"},
	} {
		if got := tc.r.Line(); got != tc.want {
			t.Errorf("line %q\nwant %q", got, tc.want)
		}
	}
}

// TestBoundSummary: a search's answer as lenspec bound prints it, in
// words and as JSON, certified or an open bracket; a failed sample has
// zero bounds.
func TestBoundSummary(t *testing.T) {
	five := 5
	for _, tc := range []struct {
		r          VerifyRecord
		text, json string
	}{
		{VerifyRecord{Sample: 2, Eps: 0.03, Verdict: "certified", Seconds: 1.5, Bound: &BoundResult{Lower: 5, Upper: &five, Certified: true}},
			"sample 2 eps 0.03: certified lower 5 upper 5\n",
			`{"sample":2,"eps":0.03,"lower":5,"upper":5,"certified":true,"seconds":1.5,"steps":null}`},
		{VerifyRecord{Sample: 0, Eps: 0.1, Verdict: "open", Witness: "w.safetensors", Bound: &BoundResult{Lower: 7}},
			"sample 0 eps 0.1: open lower 7 upper unproven\n",
			`{"sample":0,"eps":0.1,"lower":7,"upper":null,"certified":false,"witness":"w.safetensors","seconds":0,"steps":null}`},
		{VerifyRecord{Sample: 1, Eps: 0.1, Verdict: "unknown", Error: "boom"},
			"sample 1 eps 0.1: unknown lower 0 upper unproven\n",
			`{"sample":1,"eps":0.1,"lower":0,"upper":null,"certified":false,"seconds":0,"steps":null,"error":"boom"}`},
	} {
		b := tc.r.BoundSummary()
		var w strings.Builder
		b.WriteText(&w)
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if w.String() != tc.text || string(js) != tc.json {
			t.Errorf("%q %s\nwant %q %s", w.String(), js, tc.text, tc.json)
		}
	}
}

// Package bleu scores translations with corpus-level BLEU-4 (Papineni et
// al., 2002) as sacreBLEU computes it, with one reference per hypothesis,
// so that lenspec's translators can be compared with each other and with
// published numbers.
//
// Text is tokenised with Tokenize, sacreBLEU's default "13a" tokenisation,
// and is case-sensitive. The one deliberate difference from sacreBLEU's
// defaults is smoothing: sacreBLEU's corpus BLEU smooths a zero n-gram
// precision ("exp" smoothing), Corpus does not, so a corpus with no matching
// 4-gram scores 0, as in the original definition. On any real test set all
// four precisions are non-zero and the two agree.
package bleu

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// MaxOrder is the largest n-gram order BLEU counts.
const MaxOrder = 4

// Score is a corpus BLEU score with the statistics it is computed from.
type Score struct {
	// BLEU is the score on sacreBLEU's 0–100 scale.
	BLEU float64
	// Precisions are the modified n-gram precisions for n = 1…4, in
	// percent: clipped matches over hypothesis n-grams, summed over the
	// corpus. An order with no hypothesis n-grams has precision 0.
	Precisions [MaxOrder]float64
	// BP is the brevity penalty: exp(1 − RefLen/HypLen) when the
	// hypotheses are shorter than the references, else 1; 0 when there are
	// no hypothesis tokens but some reference tokens.
	BP float64
	// HypLen and RefLen are the total numbers of tokens.
	HypLen, RefLen int
	// Matches and Totals are the clipped n-gram matches and the hypothesis
	// n-gram counts per order; they let scores of parts be combined.
	Matches, Totals [MaxOrder]int
}

// Ratio is HypLen/RefLen, or 0 when there are no reference tokens.
func (s Score) Ratio() float64 {
	if s.RefLen == 0 {
		return 0
	}
	return float64(s.HypLen) / float64(s.RefLen)
}

// String formats s as sacreBLEU prints a score, e.g.
// "BLEU = 27.60 58.1/33.0/21.2/14.1 (BP = 0.983 ratio = 0.983 hyp_len = 6310 ref_len = 6419)",
// so logs can be compared with sacreBLEU's output by eye.
func (s Score) String() string {
	p := s.Precisions
	return fmt.Sprintf("BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
		s.BLEU, p[0], p[1], p[2], p[3], s.BP, s.Ratio(), s.HypLen, s.RefLen)
}

// ErrEmpty is returned by Corpus for a corpus with no segments: a test set
// that came out empty is a bug upstream, and a score of 0 would hide it.
var ErrEmpty = errors.New("bleu: no segments to score")

// Corpus returns the corpus BLEU-4 of hyps against refs, where refs[i] is
// the single reference of hyps[i]. Both are tokenised with Tokenize.
//
// n-gram matches are clipped per segment by the reference counts, then
// matches and hypothesis n-grams are summed over the corpus before the four
// precisions are formed; BLEU is BP times their geometric mean, and 0 when
// any of them is 0 (no smoothing).
func Corpus(hyps, refs []string) (Score, error) {
	if len(hyps) != len(refs) {
		return Score{}, fmt.Errorf("bleu: %d hypotheses but %d references", len(hyps), len(refs))
	}
	if len(hyps) == 0 {
		return Score{}, ErrEmpty
	}
	var s Score
	for i := range hyps {
		h, r := Tokenize(hyps[i]), Tokenize(refs[i])
		s.HypLen += len(h)
		s.RefLen += len(r)
		for n := 1; n <= MaxOrder; n++ {
			m, t := matches(h, r, n)
			s.Matches[n-1] += m
			s.Totals[n-1] += t
		}
	}
	s.finish()
	return s, nil
}

// finish derives the precisions, BP and BLEU from the counts.
func (s *Score) finish() {
	logSum := 0.0
	zero := false
	for n := range MaxOrder {
		if s.Totals[n] == 0 || s.Matches[n] == 0 {
			zero = true
			continue
		}
		s.Precisions[n] = 100 * float64(s.Matches[n]) / float64(s.Totals[n])
		logSum += math.Log(s.Precisions[n])
	}
	switch {
	case s.HypLen >= s.RefLen:
		s.BP = 1
	case s.HypLen == 0:
		s.BP = 0
	default:
		s.BP = math.Exp(1 - float64(s.RefLen)/float64(s.HypLen))
	}
	if zero {
		s.BLEU = 0
		return
	}
	s.BLEU = s.BP * math.Exp(logSum/MaxOrder)
}

// matches returns the clipped number of n-grams of hyp found in ref and the
// number of n-grams in hyp.
func matches(hyp, ref []string, n int) (match, total int) {
	if len(hyp) < n {
		return 0, 0
	}
	total = len(hyp) - n + 1
	if len(ref) < n {
		return 0, total
	}
	// Tokens never contain white space, so a space-joined n-gram is an
	// unambiguous key.
	counts := make(map[string]int, len(ref)-n+1)
	for i := 0; i+n <= len(ref); i++ {
		counts[strings.Join(ref[i:i+n], " ")]++
	}
	for i := 0; i+n <= len(hyp); i++ {
		k := strings.Join(hyp[i:i+n], " ")
		if counts[k] > 0 {
			counts[k]--
			match++
		}
	}
	return match, total
}

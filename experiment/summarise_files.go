package experiment

import (
	"fmt"
	"os"
)

// Summary is the figure and table of one experiment's results, as the
// experiment commands print them.
type Summary interface {
	Text() string
}

// Text is the summary as lenspec results summary prints it: where the
// figure went, then the table.
func (s *TextSummary) Text() string {
	return fmt.Sprintf("figure: %s, %s\n\n%s", s.FigurePNG, s.FigureSVG, s.Table)
}

// SummariseFiles joins results files of one experiment by Join's rules,
// whatever kind of records they hold (image or text attacks,
// verification or bounds; every schema version), and writes its figure
// and table to dir. Files holding two kinds of records are a
// SettingsError.
func SummariseFiles(files []string, dir, title string, opt JoinOptions) (Summary, error) {
	kind := ""
	for _, p := range files {
		k, err := FileKind(p)
		if err != nil {
			return nil, err
		}
		if kind != "" && k != "" && k != kind {
			return nil, SettingsError{fmt.Errorf("%s holds %s records, the others %s records", p, k, kind)}
		}
		if k != "" {
			kind = k
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch kind {
	case exhaustKind:
		return nil, errNoExhaust("summary")
	case "text-attack":
		j, err := Join[AttackRecord](files, opt)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		return SummariseTextAttacks(j.Records, dir, title)
	case "verify":
		j, err := Join[VerifyRecord](files, opt)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		if IsBound(j.Records) {
			return SummariseBound(j.Records, dir, title)
		}
		return SummariseVerify(j.Records, dir, title)
	}
	j, err := Join[AttackRecord](files, opt)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	return SummariseAttacks(j.Records, dir, title)
}

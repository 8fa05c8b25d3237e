package cmd

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/redrive"
)

// selectFlags are the message selection flags redrive and discard share.
type selectFlags struct {
	Filter    string
	IDs       []string
	Exclude   []string
	Limit     int64
	OlderThan time.Duration
	NewerThan time.Duration
	Groups    groupFlag

	filter *inspect.Query
}

func (s *selectFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&s.Filter, "filter", "", "jq expression selecting messages (same document as dlq peek --filter)")
	fl.StringSliceVar(&s.IDs, "id", nil, "message IDs (fingerprints shown by peek and the TUI); repeat or separate with commas")
	fl.StringSliceVar(&s.Exclude, "exclude-id", nil, "leave these message IDs in the source, whatever else selects them; repeat or separate with commas")
	fl.Int64Var(&s.Limit, "limit", 0, "move at most this many messages (0: all)")
	fl.DurationVar(&s.OlderThan, "older-than", 0, "only messages dead-lettered longer ago than this (e.g. 1h)")
	fl.DurationVar(&s.NewerThan, "newer-than", 0, "only messages dead-lettered within this (e.g. 30m)")
	s.Groups.register(c, "select")
}

func (s *selectFlags) validate() error {
	if s.Limit < 0 {
		return flagErrorf("`--limit` must be 0 (all) or more")
	}
	if s.OlderThan < 0 || s.NewerThan < 0 {
		return flagErrorf("`--older-than` and `--newer-than` take a positive duration such as 30m or 24h")
	}
	if s.OlderThan > 0 && s.NewerThan > 0 && s.NewerThan <= s.OlderThan {
		return flagErrorf("`--newer-than %s` with `--older-than %s` selects nothing: the newer-than window must be longer", s.NewerThan, s.OlderThan)
	}
	for i, id := range s.IDs {
		s.IDs[i] = strings.TrimSpace(id)
		if s.IDs[i] == "" {
			return flagErrorf("empty `--id`: pass the message IDs shown by `dlq peek`")
		}
	}
	for i, id := range s.Exclude {
		s.Exclude[i] = strings.TrimSpace(id)
		if s.Exclude[i] == "" {
			return flagErrorf("empty `--exclude-id`: pass the message IDs shown by `dlq peek`")
		}
	}
	if err := s.Groups.validate(nil); err != nil {
		return err
	}
	var err error
	s.filter, err = compileFlag("--filter", s.Filter)
	return err
}

func (s *selectFlags) apply(o *redrive.Options) {
	if s.filter != nil {
		o.Filter = s.filter
	}
	if s.Groups.sel != nil {
		o.Filter = groupFilter{q: s.filter, sel: s.Groups.sel}
	}
	o.IDs, o.Limit, o.OlderThan, o.NewerThan = s.IDs, s.Limit, s.OlderThan, s.NewerThan
	o.ExcludeIDs = s.Exclude
}

func (s *selectFlags) any() bool {
	return s.Filter != "" || len(s.IDs) > 0 || s.OlderThan > 0 || s.NewerThan > 0 || len(s.Groups.IDs) > 0
}

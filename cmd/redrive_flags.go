package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// rateValue parses "200", "200/s", "12000/m".
type rateValue float64

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }

func (r *rateValue) Type() string { return "rate" }

func (r *rateValue) Set(s string) error {
	n, err := parseRate(s)
	if err != nil {
		return err
	}
	*r = rateValue(n)
	return nil
}

func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	per := 1.0
	switch {
	case strings.HasSuffix(s, "/s"):
		s = strings.TrimSuffix(s, "/s")
	case strings.HasSuffix(s, "/m"):
		s, per = strings.TrimSuffix(s, "/m"), 60
	case strings.HasSuffix(s, "/h"):
		s, per = strings.TrimSuffix(s, "/h"), 3600
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || n != n {
		return 0, fmt.Errorf("%q is not a rate: use messages per second such as 200 or 200/s (also /m, /h)", s)
	}
	return n / per, nil
}

func parseSetHeaders(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	h := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, flagErrorf("`--set-header %s`: use KEY=VALUE", kv)
		}
		if broker.IsDeathHeader(k) || k == redrive.RedriveHeader {
			return nil, flagErrorf("`--set-header %s`: %s is set by the broker or by dlq; choose another name", kv, k)
		}
		h[k] = v
	}
	return h, nil
}

// parseDestination reads origin, queue:NAME, exchange:NAME[:KEY] and
// file://PATH (broker.ParseDestination) as a flag value.
func parseDestination(s string) (broker.Destination, error) {
	d, err := broker.ParseDestination(s)
	switch {
	case errors.Is(err, broker.ErrNotADestination):
		return d, flagErrorf("`--to %s` is not a destination: use origin, queue:NAME, exchange:NAME[:KEY], file://PATH or BROKER#DEST", broker.Redact(s))
	case err != nil:
		return d, flagErrorf("`--to`: %v", err)
	}
	return d, nil
}

func (o *redriveOptions) validate() error {
	if err := o.Select.validate(); err != nil {
		return err
	}
	if o.MaxRedrives < 0 || (o.MaxRedrives == 0 && o.changed != nil && o.changed("max-redrives")) {
		return flagErrorf("`--max-redrives %d`: give at least 1 (1 moves only messages never redriven), or leave the flag out for no limit", o.MaxRedrives)
	}
	if o.MaxRedrives > 0 && o.NoRedriveHeader {
		return flagErrorf("`--max-redrives` counts the x-dlq-redrive record that `--no-redrive-header` leaves out, so a message would never reach the limit: drop `--no-redrive-header`")
	}
	var err error
	if o.transform, err = compileFlag("--transform", o.Transform); err != nil {
		return err
	}
	if o.dedupeBy, err = compileFlag("--dedupe-by", o.DedupeBy); err != nil {
		return err
	}
	if o.headers, err = parseSetHeaders(o.SetHeaders); err != nil {
		return err
	}
	if o.Concurrency < 0 || o.Concurrency > 64 || (o.Concurrency == 0 && o.changed != nil && o.changed("concurrency")) {
		return flagErrorf("`--concurrency %d`: give 1 to 64 (1 keeps the source's order), or leave the flag out for the default", o.Concurrency)
	}
	if o.Window < 0 || o.Window > 10000 || (o.Window == 0 && o.changed != nil && o.changed("window")) {
		return flagErrorf("`--window %d`: give 1 to 10000, or leave the flag out for the default 250", o.Window)
	}
	if o.Ramp < 0 {
		return flagErrorf("`--ramp` must be a positive duration")
	}
	if o.Ramp > 0 && o.Rate == 0 {
		return flagErrorf("`--ramp` needs `--rate`: the rate to ramp up to")
	}
	if _, err := parseDestination(o.To); err != nil && !strings.Contains(o.To, "#") && !strings.HasPrefix(o.To, "http") && !strings.HasPrefix(o.To, "arn:") {
		return err
	}
	if o.ServerSide {
		if o.Resume {
			return flagErrorf("`--resume` cannot be used with `--server-side`: a server-side move keeps no journal; check it with `dlq redrive status`")
		}
		if o.Rate > redrive.MaxServerSideRate {
			return flagErrorf("`--rate` %g is too high for `--server-side`: the broker accepts at most %d messages per second", o.Rate, redrive.MaxServerSideRate)
		}
		if o.Ramp > 0 || o.Concurrency > 0 || o.Window > 0 || o.KeepDeathHeaders || o.KeepFailure || o.NoRedriveHeader || o.ResetRetries || len(o.ResetHeaders) > 0 || o.Unwrap {
			return flagErrorf("`--ramp`, `--concurrency`, `--window`, `--keep-death-headers`, `--keep-failure-headers`, `--reset-retries`, `--reset-header`, `--unwrap` and `--no-redrive-header` do not apply to `--server-side`: the broker moves messages as they are")
		}
		if len(o.Select.Groups.IDs) > 0 {
			return flagErrorf("`--group` selects messages one by one, which `--server-side` cannot: the broker moves every message; drop one of them")
		}
		var ro redrive.Options
		o.libOptions(&ro)
		if err := redrive.ServerSideRefusal(ro); err != nil {
			return flagErrorf("%v", err)
		}
	}
	return o.validateCanary()
}

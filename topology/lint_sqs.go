package topology

import (
	"slices"
	"strconv"
	"time"
)

func lintSQS(m *SQSModel, add addFunc) {
	for _, l := range m.Ladders {
		for i := 1; i < len(l.Delays); i++ {
			if l.Delays[i] <= l.Delays[i-1] {
				add(SevWarning, "ladder-ttl-order", l.Pos, "sqs retry ladder "+l.Main,
					"sqs retry ladder `%s`: tier %d (%s) is not longer than tier %d (%s); order tiers from the shortest delay to the longest",
					l.Main, i+1, FormatDuration(l.Delays[i]), i, FormatDuration(l.Delays[i-1]))
			}
		}
	}
	byName := map[string]SQSQueue{}
	for _, q := range m.Queues {
		byName[q.Name] = q
	}
	retention := func(q SQSQueue) time.Duration {
		if v, ok := q.Attributes["MessageRetentionPeriod"]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(n) * time.Second
		}
		return 4 * 24 * time.Hour // the SQS default
	}
	for _, q := range m.Queues {
		if q.DeadLetter == nil {
			continue
		}
		obj := "sqs queue " + q.Name
		dlq, ok := byName[q.DeadLetter.Queue]
		if !ok {
			add(SevWarning, "sqs-dlq-undeclared", q.Pos, obj, "queue `%s` dead-letters to `%s`, which this spec does not declare: it must already exist", q.Name, q.DeadLetter.Queue)
			continue
		}
		if q.FIFO != dlq.FIFO {
			kind := func(f bool) string {
				if f {
					return "FIFO"
				}
				return "standard"
			}
			add(SevError, "sqs-fifo-mismatch", q.Pos, obj, "%s queue `%s` dead-letters to %s queue `%s`: SQS requires both to be FIFO or both standard",
				kind(q.FIFO), q.Name, kind(dlq.FIFO), dlq.Name)
		}
		if rs, rd := retention(q), retention(dlq); rd < rs {
			add(SevError, "sqs-dlq-retention", dlq.Pos, "sqs queue "+dlq.Name,
				"DLQ `%s` keeps messages %s, less than its source `%s` (%s): SQS keeps the original enqueue time, so dead letters can expire on arrival; set the DLQ's `retention` longer (14d is the most)",
				dlq.Name, FormatDuration(rd), q.Name, FormatDuration(rs))
		} else if rd == rs && rd < 14*24*time.Hour {
			add(SevWarning, "sqs-dlq-retention", dlq.Pos, "sqs queue "+dlq.Name,
				"DLQ `%s` keeps messages exactly as long as its source `%s` (%s): dead letters may expire soon after arrival; set the DLQ's `retention` longer",
				dlq.Name, q.Name, FormatDuration(rd))
		}
		if ra := dlq.RedriveAllow; ra != nil {
			if ra.Permission == "denyAll" || (ra.Permission == "byQueue" && !slices.Contains(ra.Sources, q.Name)) {
				add(SevError, "sqs-redrive-denied", q.Pos, obj, "DLQ `%s`'s redrive_allow does not admit `%s`: SQS refuses the RedrivePolicy; add it to `sources`", dlq.Name, q.Name)
			}
		}
	}
}

// lintSQSModel checks the model's SQS part, if any.
func lintSQSModel(m *Model, _ LintOptions, add addFunc) {
	if m.SQS != nil {
		lintSQS(m.SQS, add)
	}
}

package cmd

import (
	"net/url"
	"regexp"
	"sync"
)

// userinfo matches the credentials part of any URL in free text.
var userinfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@\s:]*):([^/@\s]*)@`)
})

// Redact hides passwords in URLs inside s ("amqp://user:xxxxx@host").
func Redact(s string) string {
	return userinfo().ReplaceAllString(s, "${1}${2}:xxxxx@")
}

// RedactURL returns a URL with its password hidden, or the input redacted as
// text when it does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redact(raw)
	}
	return u.Redacted()
}

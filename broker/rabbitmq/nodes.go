package rabbitmq

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// A broker may be reached through several nodes (the members of a cluster,
// or one broker behind several addresses). They are given as several hosts
// in the URL,
//
//	amqp://ops@rabbit-1:5672,rabbit-2:5672,rabbit-3/shop
//
// (a host without a port gets the scheme's, 5672 or 5671), and as
// Config.Nodes (the `nodes:` key of a context), tried after the URL's
// hosts. Every node shares the URL's user, password, vhost and query.
// amqp091's ParseURI takes one host only, so the list is split here into
// one URL per node before anything else reads it.

// node is one address of the broker, with everything needed to dial it and
// to reach its management API.
type node struct {
	addr     string // host:port, as dialled and printed
	uri      string // amqp:// for amqp.DialConfig (TLS or not); holds the password: never printed
	redacted string // amqp://user@host:port/vhost, safe to print
	tls      *tls.Config
	mgmt     *url.URL // management API base, without credentials
	mgmtUser string
	mgmtPass string
	// mgmtGuessed: mgmt is the default port on the AMQP host, not a URL
	// the user gave.
	mgmtGuessed bool
}

// guessHint explains, for a management API dlq could not use, the address
// it guessed when the AMQP port is not the default one either (so the
// management port likely is not either), and how to give the real one.
func (n node) guessHint() *broker.Hint {
	_, port, _ := net.SplitHostPort(n.addr)
	if !n.mgmtGuessed || port == "5672" || port == "5671" || port == "" {
		return broker.Hintf("")
	}
	return broker.Hintf(" (dlq guessed %s, the default management port on the AMQP host, because no %s was given; AMQP is on port %s, so the management API is likely elsewhere: pass %s)", n.mgmt, broker.OptManagementURL, port, broker.OptManagementURL.With("http://HOST:PORT"))
}

// splitHosts splits a URL that lists several hosts after the user
// (scheme://USERINFO@H1[:P1],H2[:P2]/PATH?QUERY) into one URL per host, each
// with the same scheme, user information, path and query. A URL with one
// host comes back unchanged. Errors never quote the URL: it may hold the
// password.
func splitHosts(raw string) ([]string, error) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return []string{raw}, nil
	}
	head, rest := raw[:i+3], raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	if !strings.Contains(hosts, ",") {
		return []string{raw}, nil
	}
	var out []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, broker.Hintf("malformed broker URL: an empty host in its list of hosts: want %suser@host1:5672,host2:5672/vhost: check %s", head, broker.OptBroker)
		}
		out = append(out, head+userinfo+h+tail)
	}
	return out, nil
}

// withHost is the URL raw (one host) with its host replaced by host.
func withHost(raw, host string) string {
	i := strings.Index(raw, "://")
	head, rest := raw[:i+3], raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo = authority[:at+1]
	}
	return head + userinfo + host + tail
}

// checkNodeAddr checks one entry of Config.Nodes: HOST, HOST:PORT or
// [IPv6]:PORT. The entry is quoted in errors only when it cannot hold a
// password.
func checkNodeAddr(i int, a string) error {
	if strings.ContainsAny(a, "@") {
		return fmt.Errorf("node %d of `nodes` holds a user or password: list only HOST or HOST:PORT (the user and password come from the broker URL and `password_env`)", i+1)
	}
	if a == "" || strings.ContainsAny(a, "/?#, \t") || strings.Contains(a, "://") {
		return fmt.Errorf("malformed node %q in `nodes`: want HOST or HOST:PORT (rabbit-2:5672)", a)
	}
	host, port := a, ""
	if h, p, err := net.SplitHostPort(a); err == nil {
		host, port = h, p
	} else if strings.Count(a, ":") > 1 && !strings.HasPrefix(a, "[") {
		return fmt.Errorf("malformed node %q in `nodes`: write an IPv6 address in brackets, [::1]:5672", a)
	}
	if host == "" {
		return fmt.Errorf("malformed node %q in `nodes`: no host: want HOST or HOST:PORT (rabbit-2:5672)", a)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("malformed node %q in `nodes`: port %q is not a number between 1 and 65535", a, port)
		}
	}
	return nil
}

// nodeURLs lists one URL per node: the URL's hosts, then cfg.Nodes, without
// duplicates (the same host and port given twice is one node).
func nodeURLs(cfg Config) ([]string, error) {
	urls, err := splitHosts(strings.TrimSpace(cfg.URL))
	if err != nil {
		return nil, err
	}
	for i, a := range cfg.Nodes {
		a = strings.TrimSpace(a)
		if err := checkNodeAddr(i, a); err != nil {
			return nil, err
		}
		urls = append(urls, withHost(urls[0], a))
	}
	return urls, nil
}

// managementURLs splits Config.ManagementURL: empty (derive one per node),
// one URL for every node, or one per node, paired by position.
func managementURLs(raw string, nodes int) ([]string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return make([]string, nodes), nil
	}
	parts := strings.Split(raw, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
		if parts[i] == "" {
			return nil, broker.Hintf("malformed management URL: an empty entry in its list: want http://host1:15672,http://host2:15672: check %s", broker.OptManagementURL)
		}
	}
	switch len(parts) {
	case 1:
		out := make([]string, nodes)
		for i := range out {
			out[i] = parts[0]
		}
		return out, nil
	case nodes:
		return parts, nil
	}
	return nil, broker.Hintf("%s lists %d URLs for %d broker nodes: give one URL for all nodes, or one per node in the order of the broker's hosts (then `nodes`)", broker.OptManagementURL, len(parts), nodes)
}

// parseNode checks one single-host broker URL and builds its node.
func parseNode(raw string, cfg Config) (node, *amqp.URI, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included: never pass it on.
		return node{}, nil, broker.Hintf("malformed broker URL: want amqp://user:password@host:5672/vhost (percent-encode reserved characters such as @ : / in the user or password): check %s", broker.OptBroker)
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return node{}, nil, broker.Hintf("malformed broker URL: scheme %q is not amqp:// or amqps://: check %s", u.Scheme, broker.OptBroker)
	}
	if u.Hostname() == "" {
		return node{}, nil, broker.Hintf("malformed broker URL: no host: want %s://user@host:port/vhost: check %s", u.Scheme, broker.OptBroker)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return node{}, nil, broker.Hintf("malformed broker URL: port %q is not a number between 1 and 65535: check %s", p, broker.OptBroker)
		}
	}
	if cfg.Password != "" {
		name := "guest"
		if u.User != nil {
			name = u.User.Username()
		}
		u.User = url.UserPassword(name, cfg.Password)
	}
	uri, err := amqp.ParseURI(u.String())
	if err != nil {
		return node{}, nil, broker.Hintf("malformed broker URL: %s: check %s", safeURIError(err), broker.OptBroker)
	}
	n := node{addr: net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port))}
	// dial speaks TLS itself (below the frame guard): amqp091-go gets
	// amqp:// with the port made explicit.
	plain := *u
	plain.Scheme, plain.Host = "amqp", n.addr
	n.uri = plain.String()
	red := url.URL{Scheme: uri.Scheme, Host: n.addr, Path: "/" + uri.Vhost, User: url.User(uri.Username)}
	if uri.Vhost == "/" {
		red.Path = "/"
	}
	n.redacted = red.String()
	return n, &uri, nil
}

// redactedList is scheme://user@addr1,addr2/vhost: the whole broker, safe
// to print.
func redactedList(nodes []node) string {
	if len(nodes) == 1 {
		return nodes[0].redacted
	}
	u, err := url.Parse(nodes[0].redacted)
	if err != nil {
		return nodes[0].redacted
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.addr
	}
	u.Host = strings.Join(addrs, ",")
	return u.String()
}

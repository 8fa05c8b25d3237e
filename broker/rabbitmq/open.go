package rabbitmq

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// Adapter is the RabbitMQ adapter for a front end's registry: amqp:// and
// amqps:// URLs with the context fields of the login, the management API
// and TLS, and `nodes`.
func Adapter() broker.Adapter {
	return broker.Adapter{
		Name:       "rabbitmq",
		Schemes:    []string{"amqp://", "amqps://"},
		About:      []string{"RabbitMQ", "RabbitMQ over TLS"},
		Open:       openSettings,
		URLSecrets: true,
		Lists:      map[string]string{"nodes": "RabbitMQ nodes"},
		Flags: []broker.Flag{
			{Option: broker.OptManagementURL, Field: "management_url", Env: "DLQ_MANAGEMENT_URL", Usage: "RabbitMQ management API URL (default http://HOST:15672)"},
			{Option: broker.OptCAFile, Field: "ca_file", Usage: "CA certificate file for amqps:// and https:// (PEM)"},
			{Option: broker.OptCertFile, Field: "cert_file", Usage: "client certificate for TLS (PEM)"},
			{Option: broker.OptKeyFile, Field: "key_file", Usage: "client key for TLS (PEM)"},
			{Option: broker.OptInsecureSkipVerify, Field: "insecure_skip_verify", Bool: true, Usage: "do not verify TLS certificates (dangerous)"},
			{Option: broker.OptAuth, Field: "auth", Usage: "RabbitMQ login: plain (user and password) or external (the --cert-file client certificate)",
				Values: []string{"plain\tuser and password", "external\tTLS client certificate"}},
			{Option: broker.OptManagementUser, Field: "management_user", Usage: "RabbitMQ management API user (password from DLQ_MANAGEMENT_PASSWORD; default the AMQP user)"},
			{Option: broker.OptManagementCAFile, Field: "management_ca_file", Usage: "CA certificate file for the management API (PEM; default --ca-file)"},
			{Option: broker.OptManagementCertFile, Field: "management_cert_file", Usage: "client certificate for the management API (PEM; default --cert-file)"},
			{Option: broker.OptManagementKeyFile, Field: "management_key_file", Usage: "client key for the management API (PEM; default --key-file)"},
		},
	}
}

func openSettings(ctx context.Context, s broker.Settings) (broker.Broker, error) {
	pw, err := Password(s)
	if err != nil {
		return nil, err
	}
	mgmtPW, err := ManagementPassword(s)
	if err != nil {
		return nil, err
	}
	f := s.Field
	b, err := Open(ctx, Config{
		URL: s.Ref, Nodes: s.Lists["nodes"], ManagementURL: f("management_url"), Password: pw,
		Auth: f("auth"), ManagementUser: f("management_user"), ManagementPassword: mgmtPW,
		CAFile: f("ca_file"), CertFile: f("cert_file"), KeyFile: f("key_file"),
		ManagementCAFile: f("management_ca_file"), ManagementCertFile: f("management_cert_file"), ManagementKeyFile: f("management_key_file"),
		InsecureSkipVerify: f("insecure_skip_verify") == "true", Timeout: s.Timeout, Logger: s.Logger,
		ReadOnly: s.ReadOnly != nil && s.ReadOnly(),
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// external reports an EXTERNAL login (the client certificate), by `auth`
// or the URL's auth_mechanism=external.
func external(s broker.Settings) bool {
	if strings.EqualFold(strings.TrimSpace(s.Field("auth")), AuthExternal) {
		return true
	}
	return s.Field("auth") == "" && strings.Contains(strings.ToLower(s.Ref), "auth_mechanism=external")
}

// Password is the password when the URL has none: from the environment
// variable the context names (password_env), else DLQ_PASSWORD. An
// EXTERNAL login has none.
func Password(s broker.Settings) (string, error) {
	if external(s) {
		return "", nil
	}
	if broker.HasPassword(s.Ref) {
		// Also in a list of hosts url.Parse refuses (amqp://u:p@[::1]:5672,h2/).
		return "", nil
	}
	if env := s.Field("password_env"); env != "" {
		return contextSecret(s, env, "password_env", "the broker's password")
	}
	pw := s.Env("DLQ_PASSWORD")
	if pw == "" {
		// Without a password the AMQP client would try "guest", and the
		// broker's answer (wrong username or password) would hide that
		// none was given. Only guest, or no user, gets that default.
		if u, err := url.Parse(s.Ref); err == nil && u.User != nil && u.User.Username() != "" && u.User.Username() != "guest" {
			return "", fmt.Errorf("no password given for %s: set DLQ_PASSWORD, a context's `password_env`, or put it in the URL", u.User.Username())
		}
	}
	return pw, nil
}

// ManagementPassword is the management API's own password: from the
// environment variable the context names in management_password_env, else
// DLQ_MANAGEMENT_PASSWORD. A management user needs one; without a
// management user, it replaces the AMQP password for the API.
func ManagementPassword(s broker.Settings) (string, error) {
	if env := s.Field("management_password_env"); env != "" {
		return contextSecret(s, env, "management_password_env", "the management API's password")
	}
	pw := s.Env("DLQ_MANAGEMENT_PASSWORD")
	if pw == "" && s.Field("management_user") != "" {
		return "", fmt.Errorf("no password given for management user `%s`: set DLQ_MANAGEMENT_PASSWORD, or a context's `management_password_env`", s.Field("management_user"))
	}
	return pw, nil
}

// contextSecret is the value of the environment variable env that a
// context names in its key (password_env, management_password_env).
func contextSecret(s broker.Settings, env, key, what string) (string, error) {
	var v string
	ok := false
	if s.LookupEnv != nil {
		v, ok = s.LookupEnv(env)
	}
	if !ok || v == "" {
		return "", &broker.ContextError{Context: s.Context, Err: fmt.Errorf("environment variable %s (its `%s`) is not set: export it with %s", env, key, what)}
	}
	return v, nil
}

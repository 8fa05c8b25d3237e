package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
)

// Config is dlq's config file: named contexts and the one in use. It never
// holds a secret: a context names the environment variable that holds its
// password.
//
//	current-context: prod-rabbit
//	contexts:
//	  prod-rabbit:
//	    broker: amqps://ops@rabbit.prod.example.com:5671/shop
//	    nodes: [rabbit-2.prod.example.com, rabbit-3.prod.example.com:5671]
//	    management_url: https://rabbit.prod.example.com:15671
//	    password_env: RABBIT_PROD_PASSWORD
//	    ca_file: /etc/ssl/certs/prod-ca.pem
//	    read_only: true
//	  prod-sqs:
//	    broker: sqs://eu-west-1
//	    profile: prod-admin
type Config struct {
	CurrentContext string                    `yaml:"current-context,omitempty" json:"current_context,omitempty"`
	Contexts       map[string]*BrokerContext `yaml:"contexts,omitempty" json:"contexts,omitempty"`

	path string // where it was read from
}

// BrokerContext is one named broker with how to reach it.
type BrokerContext struct {
	Broker             string `yaml:"broker" json:"broker"`
	ManagementURL      string `yaml:"management_url,omitempty" json:"management_url,omitempty"`
	Region             string `yaml:"region,omitempty" json:"region,omitempty"`
	Endpoint           string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	Profile            string `yaml:"profile,omitempty" json:"profile,omitempty"`
	CAFile             string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file,omitempty" json:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file,omitempty" json:"key_file,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env,omitempty" json:"password_env,omitempty"`
	// Auth is the RabbitMQ login: plain (default) or external.
	Auth string `yaml:"auth,omitempty" json:"auth,omitempty"`
	// ManagementUser logs in to the management API with the password in
	// the variable ManagementPasswordEnv names (default
	// DLQ_MANAGEMENT_PASSWORD).
	ManagementUser        string `yaml:"management_user,omitempty" json:"management_user,omitempty"`
	ManagementPasswordEnv string `yaml:"management_password_env,omitempty" json:"management_password_env,omitempty"`
	ManagementCAFile      string `yaml:"management_ca_file,omitempty" json:"management_ca_file,omitempty"`
	ManagementCertFile    string `yaml:"management_cert_file,omitempty" json:"management_cert_file,omitempty"`
	ManagementKeyFile     string `yaml:"management_key_file,omitempty" json:"management_key_file,omitempty"`
	ReadOnly              bool   `yaml:"read_only,omitempty" json:"read_only,omitempty"`
	AuditLog              string `yaml:"audit_log,omitempty" json:"audit_log,omitempty"`

	// Nodes are more addresses (HOST or HOST:PORT) of a RabbitMQ broker's
	// nodes, tried after the broker URL's hosts when one does not answer.
	Nodes []string `yaml:"nodes,omitempty" json:"nodes,omitempty"`
}

// ConfigPath is the config file in use: --config, else
// $XDG_CONFIG_HOME/dlq/config.yaml (~/.config/dlq/config.yaml).
func (f *Factory) ConfigPath() string {
	if f.Options.ConfigPath != "" {
		return f.Options.ConfigPath
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(".config", "dlq", "config.yaml")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "dlq", "config.yaml")
}

// LoadConfig reads the config file. A missing file at the default path is an
// empty config; a missing file named with --config is an error.
func (f *Factory) LoadConfig() (*Config, error) {
	path := f.ConfigPath()
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && f.Options.ConfigPath == "" {
			return &Config{path: path, Contexts: map[string]*BrokerContext{}}, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("config file %s not found: check `--config`", path)
		}
		return nil, fmt.Errorf("read config file %s: %v", path, pathErr(err))
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	c.path = path
	return c, nil
}

func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:unmarshal errors:\s*)?`) })

// parseConfig decodes and checks a config file. Unknown keys are errors, so
// that a misspelt `read_only` cannot silently leave a context writable.
func parseConfig(data []byte) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		msg := yamlLine().ReplaceAllString(err.Error(), "")
		msg = strings.Join(strings.Fields(msg), " ")
		return nil, errors.New(msg)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]*BrokerContext{}
	}
	for name, ctx := range c.Contexts {
		if ctx == nil {
			return nil, fmt.Errorf("context `%s` is empty: give it at least `broker:`", name)
		}
		if err := validContextName(name); err != nil {
			return nil, err
		}
		if strings.TrimSpace(ctx.Broker) == "" {
			return nil, fmt.Errorf("context `%s` has no `broker:`: add a broker URL (amqp://, amqps://, sqs://, file://)", name)
		}
		if a := strings.ToLower(ctx.Auth); a != "" && a != "plain" && a != "external" {
			return nil, fmt.Errorf("context `%s`: unknown `auth` %q: use plain (user and password) or external (the client certificate)", name, ctx.Auth)
		}
		if len(ctx.Nodes) > 0 {
			reg := dlqAdapters()
			if owner, about, ok := reg.ListOwner("nodes"); ok {
				if a, ok := reg.Lookup(ctx.Broker); !ok || !a.Same(owner) {
					return nil, fmt.Errorf("context `%s`: `nodes` lists %s, but its broker is not %s: remove `nodes`", name, about, strings.Join(owner.Schemes, " or "))
				}
			}
		}
		if broker.HasPassword(ctx.Broker) {
			return nil, fmt.Errorf("context `%s`: the broker URL holds a password: remove it and set `password_env:` to the name of an environment variable that holds it", name)
		}
	}
	if c.CurrentContext != "" && c.Contexts[c.CurrentContext] == nil {
		return nil, fmt.Errorf("current-context `%s` is not among the contexts (%s)", c.CurrentContext, strings.Join(c.Names(), ", "))
	}
	return c, nil
}

func validContextName(name string) error {
	if name == "" || strings.ContainsAny(name, ":/#@ \t") {
		return fmt.Errorf("context name %q: use letters, digits, '-', '_' and '.' (no ':', '/', '#', '@' or spaces)", name)
	}
	return nil
}

// Names lists the context names, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Path is the file the config was read from.
func (c *Config) Path() string { return c.path }

// Context returns the named context, or an error listing the known ones.
func (c *Config) Context(name string) (*BrokerContext, error) {
	if ctx := c.Contexts[name]; ctx != nil {
		return ctx, nil
	}
	if len(c.Contexts) == 0 {
		return nil, fmt.Errorf("unknown context `%s`: %s defines no contexts: add one under `contexts:` or pass `--broker URL`", name, c.path)
	}
	return nil, fmt.Errorf("unknown context `%s`: known contexts are %s (in %s)", name, strings.Join(c.Names(), ", "), c.path)
}

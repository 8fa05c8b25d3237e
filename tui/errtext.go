package tui

import "github.com/dlq-tools/dlq/broker"

// settingWords words a setting that a library error names: the key that
// changes it where the TUI has one, else the setting and the context entry
// that holds it (the TUI has no flags).
func (c *common) settingWords(s broker.Setting) string {
	var w string
	switch s.Option {
	case broker.OptFilter:
		return "the filter (" + c.keys.messages.Filter.Help().Key + ")"
	case broker.OptTransform:
		return "an edit of the message (" + c.keys.detail.Edit.Help().Key + " in its detail view)"
	case broker.OptBroker:
		w = "the broker URL (broker in the context)"
	case broker.OptCAFile:
		w = "the CA file (ca_file in the context)"
	case broker.OptCertFile:
		w = "the client certificate (cert_file in the context)"
	case broker.OptKeyFile:
		w = "the client key (key_file in the context)"
	case broker.OptManagementURL:
		w = "the management URL (management_url in the context)"
	case broker.OptManagementUser:
		w = "the management user (management_user in the context)"
	case broker.OptManagementCAFile:
		w = "the management CA file (management_ca_file in the context)"
	case broker.OptManagementCertFile:
		w = "the management certificate (management_cert_file in the context)"
	case broker.OptManagementKeyFile:
		w = "the management key (management_key_file in the context)"
	case broker.OptInsecureSkipVerify:
		w = "insecure_skip_verify in the context"
	case broker.OptAuth:
		w = "the login mechanism (auth in the context)"
	case broker.OptRegion:
		w = "the AWS region (region in the context)"
	case broker.OptEndpointURL:
		w = "the endpoint (endpoint in the context)"
	case broker.OptContext:
		w = "the context"
	case broker.OptAllowDrop:
		return "" // the TUI never moves into a queue that would drop

	default:
		return broker.PlainSetting(s)
	}
	if s.Value != "" {
		w += " " + s.Value
	}
	return w
}

// errText is err as the TUI shows it, its settings in the TUI's words.
func (c *common) errText(err error) string { return broker.RenderError(err, c.settingWords) }

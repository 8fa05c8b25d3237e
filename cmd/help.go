package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker/archive"
)

// newHelpTopic is a command that only carries text: cobra lists it under
// "Additional help topics" and `dlq help NAME` prints it.
func newHelpTopic(name, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Long:  long,
	}
}

// newLazyHelpTopic is a help topic whose text is built only when it is
// shown (`dlq help NAME`), not each time dlq starts. Until then Long is
// empty; FillHelpTopics fills it in for the docs.
func newLazyHelpTopic(name, short string, long func() string) *cobra.Command {
	c := newHelpTopic(name, short, "")
	c.SetHelpFunc(func(c *cobra.Command, args []string) {
		fillHelpTopic(c, long)
		c.HelpFunc()(c, args)
	})
	return c
}

func fillHelpTopic(c *cobra.Command, long func() string) {
	c.Long = long()
	c.SetHelpFunc(nil) // from now on, the help every command uses
}

// FillHelpTopics builds the text of every lazy help topic under root, for
// a reader of Long (the docs generator) that does not print help.
func FillHelpTopics(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if long, ok := lazyTopics[c.Name()]; ok && c.Long == "" {
			fillHelpTopic(c, long)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// lazyTopics are the help topics built on first use, by name.
var lazyTopics = map[string]func() string{
	"topology-spec": topologySpecHelp,
}

// newHelpTopics is the help topic that lists the others, so that
// `dlq help topics` names what `dlq help NAME` can show. Call it after
// every other command is added to root.
func newHelpTopics(root *cobra.Command) *cobra.Command {
	var b strings.Builder
	b.WriteString("The help topics: read one with `dlq help NAME`.\n\n")
	var names []*cobra.Command
	width := len("topics")
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			names = append(names, c)
			width = max(width, len(c.Name()))
		}
	}
	for _, c := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.Name(), c.Short)
	}
	fmt.Fprintf(&b, "  %-*s  %s\n", width, "topics", "This list")
	b.WriteString("\nEvery command also has its own help: `dlq help COMMAND` or `dlq COMMAND --help`.")
	return newHelpTopic("topics", "List the help topics", b.String())
}

func newHelpExitCodes() *cobra.Command {
	return newHelpTopic("exit-codes", "Exit codes and what they mean", exitCodesHelp)
}

func newHelpArchiveFormat() *cobra.Command {
	return newHelpTopic("archive-format", "The archive file format (file://…jsonl[.gz])", archive.FormatHelp)
}

func newHelpBrokers() *cobra.Command {
	return newHelpTopic("brokers", "Naming brokers, queues, destinations; contexts and the config file", brokersHelp)
}

const brokersHelp = `BROKERS. --broker takes a URL or the name of a context:

  amqp://USER@HOST:5672/VHOST     RabbitMQ (the path is the vhost; "/" or
  amqps://USER@HOST:5671/VHOST    nothing is the default vhost, %2F escaped)
                                  over plain AMQP or TLS (see TLS below).
                                  The management API is http://HOST:15672
                                  (https://HOST:15671 for amqps) unless
                                  --management-url says.
  amqp://USER@H1:5672,H2:5672,H3/VHOST
                                  several nodes of one broker (a cluster):
                                  dlq connects to the first that answers and,
                                  when that node goes away, to the next; the
                                  management API follows the node in use. A
                                  host without a port gets 5672 (5671 for
                                  amqps). --management-url takes one URL for
                                  all nodes, or one per node in the same
                                  order, comma-separated.
  sqs://   sqs://REGION           Amazon SQS through the AWS config chain
                                  (AWS_PROFILE, AWS_REGION, SSO, …);
                                  --region, --endpoint-url (or the SDK's
                                  AWS_ENDPOINT_URL_SQS) for emulators.
  file://PATH                     an archive (.jsonl, .jsonl.gz)
  demo:                           the embedded sample archive
  NAME                            a context from the config file

The RabbitMQ password comes from the URL, else from the environment variable
that the context names in password_env, else from DLQ_PASSWORD. dlq never
prints it. A password in a URL on the command line shows in the process
list (ps) and the shell history: prefer DLQ_PASSWORD or a context with
password_env. dlq warns on stderr when it sees one there (not with --quiet,
nor without a terminal).

LOGIN. --auth plain (the default) logs in with the user and password.
--auth external (context key auth: external) logs in with the TLS client
certificate (SASL EXTERNAL, the rabbitmq_auth_mechanism_ssl plugin): it
needs amqps:// and --cert-file/--key-file, sends no password, and the
broker takes the user from the certificate (its CN with
ssl_cert_login_from = common_name; that user must exist).

MANAGEMENT API. dlq logs in to it as --management-user with the password in
DLQ_MANAGEMENT_PASSWORD (a context: management_user, management_password_env);
without a management user, as the AMQP user with the AMQP password (or with
DLQ_MANAGEMENT_PASSWORD, when set). A user and password in --management-url
win over both. An EXTERNAL login has no password: the management API then
needs --management-user.

TLS. amqps:// uses TLS, amqp:// never does (the TLS files then serve only an
https:// management API). Certificates are verified unless you pass
--insecure-skip-verify.
  --ca-file FILE                  a CA that signed the broker's certificate,
                                  added to the system's roots (which honour
                                  SSL_CERT_FILE and SSL_CERT_DIR)
  --cert-file, --key-file         a client certificate and its key
  --management-ca-file, --management-cert-file, --management-key-file
                                  the same for the management API alone (a
                                  proxy with a certificate of another CA, or
                                  one that wants a client certificate); each
                                  defaults to the AMQP one

Without --broker, dlq uses --context NAME (or DLQ_CONTEXT), else the config
file's current-context, else the DLQ_BROKER environment variable (with
DLQ_MANAGEMENT_URL for its management API, when that is not at the default
address). A URL given with --broker is used on its own. Flags override a
context's values.

QUEUES. A command's QUEUE argument is a queue name on that broker, or:

  file://PATH                     every message of an archive
  demo:NAME                       one queue of the sample archive
  https://sqs.REGION.amazonaws.com/ACCOUNT/NAME, arn:aws:sqs:REGION:ACCOUNT:NAME
                                  an SQS queue, whatever --broker says

DESTINATIONS (redrive --to):

  origin                          where each message was dead-lettered from
                                  (RabbitMQ: its newest x-death, passing over
                                  the TTL expiry of a retry queue that came
                                  after a rejection in another queue; SQS:
                                  DeadLetterQueueSourceArn, else the DLQ's
                                  only source queue)
  queue:NAME                      a queue on the source's broker
  exchange:NAME[:ROUTING-KEY]     a RabbitMQ exchange on the source's broker;
                                  without a key, each message goes with the
                                  key it was routed with before it died (its
                                  x-death record), else its own
  file://PATH                     appended to an archive (created if missing)
  BROKER#DEST                     DEST on another broker, named by URL or
                                  context:
                                    amqp://ops@rabbit-b:5672/shop#queue:orders
                                    sqs://eu-west-1#queue:orders
                                    prod-rabbit#exchange:orders.x:order.created
  an SQS queue URL or ARN         that queue

CONTEXTS live in $XDG_CONFIG_HOME/dlq/config.yaml (~/.config/dlq/config.yaml),
or the file --config names. They hold no secrets:

  current-context: prod-rabbit
  contexts:
    prod-rabbit:
      broker: amqps://ops@rabbit.prod.example.com:5671/shop
      nodes: [rabbit-2.prod.example.com, rabbit-3.prod.example.com:5671]
      management_url: https://rabbit.prod.example.com:15671
      password_env: RABBIT_PROD_PASSWORD   # the variable, not the password
      ca_file: /etc/ssl/certs/prod-ca.pem
      read_only: true                      # every mutation exits with code 4
      audit_log: /var/log/dlq/audit.jsonl
    prod-rabbit-cert:
      broker: amqps://rabbit.prod.example.com:5671/shop
      auth: external                       # the client certificate's CN
      cert_file: /etc/dlq/client.pem
      key_file: /etc/dlq/client.key
      ca_file: /etc/ssl/certs/prod-ca.pem
      management_url: https://rabbit-admin.prod.example.com
      management_user: dlq-ops
      management_password_env: RABBIT_MGMT_PASSWORD
    prod-sqs:
      broker: sqs://eu-west-1
      profile: prod-admin
    local-sqs:
      broker: sqs://us-east-1
      endpoint: http://127.0.0.1:9324

Keys: broker, nodes, management_url, region, endpoint, profile, ca_file,
cert_file, key_file, insecure_skip_verify, password_env, auth,
management_user, management_password_env, management_ca_file,
management_cert_file, management_key_file, read_only, audit_log. Unknown
keys are errors. ` + "`dlq contexts`" + ` lists the contexts.
nodes lists more nodes of a RabbitMQ broker (HOST or HOST:PORT), tried after
the URL's hosts with the URL's user and vhost; management_url then holds one
URL, or one per node (the URL's hosts first), comma-separated.

RABBITMQ CLUSTERS AND 4.x. ` + "`dlq queues`" + ` shows a quorum queue's replicas in
MEMBERS ("3/3 lead rabbit-1": members running out of all, and the leader's
node; "no leader" when the leader's node is down) and what is wrong in NOTES
(members down, no quorum). RabbitMQ 4.x gives a quorum queue without a
delivery limit the limit of 20; with no dead-letter exchange, a message
redelivered past its limit is dropped without a trace. dlq queues marks such
queues (NOTES "DROPS after 20 deliveries", JSON drops_after) and warns on
stderr, ` + "`dlq topology lint`" + ` warns (quorum-silent-drop) and ` + "`dlq topology plan`" + `
warns on 4.x. Fix: a dead-letter exchange (a policy with
dead-letter-exchange), or on 4.x delivery-limit -1 (on 3.x a negative limit
removes a message at its first return).
`

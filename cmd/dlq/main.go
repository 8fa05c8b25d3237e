// Command dlq operates dead-letter queues on RabbitMQ and Amazon SQS.
package main

import (
	"os"

	"github.com/dlq-tools/dlq/cmd"
)

func main() { os.Exit(int(cmd.Main())) }

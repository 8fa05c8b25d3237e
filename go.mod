module github.com/dlq-tools/dlq

go 1.26.8

require (
	github.com/itchyny/gojq v0.12.20
	github.com/spf13/cobra v1.10.2
	golang.org/x/term v0.47.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

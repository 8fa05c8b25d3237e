package cmd

// FlagError is a bad flag or argument: the command line, not the broker,
// is at fault. On a terminal dlq prints the error and then the command's
// usage line, as gh does for its FlagError (cli/cli pkg/cmdutil/errors.go);
// without one the error stays one line. Make one with flagErrorf; cobra's
// own flag parsing errors become one too.
type FlagError struct{ err error }

func (e *FlagError) Error() string { return e.err.Error() }
func (e *FlagError) Unwrap() error { return e.err }

package cmd

import "github.com/spf13/cobra"

// addCommands registers every verb. One line per verb file.
func addCommands(root *cobra.Command, f *Factory) {
}

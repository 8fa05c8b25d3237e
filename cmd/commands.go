package cmd

import "github.com/spf13/cobra"

// addCommands registers every verb. One line per verb file.
func addCommands(root *cobra.Command, f *Factory) {
	root.AddCommand(newCmdPeek(f, nil))
	root.AddCommand(newCmdShow(f, nil))
	root.AddCommand(newCmdStats(f, nil))
	root.AddCommand(newCmdExport(f, nil))
	root.AddCommand(newHelpPeekSafety())
	root.AddCommand(newCmdQueues(f, nil))
	root.AddCommand(newCmdContexts(f, nil))
	root.AddCommand(newCmdVersion(f, nil))
	addTopologyCommands(root, f)
	root.AddCommand(newHelpExitCodes(), newHelpArchiveFormat(), newHelpBrokers())
	root.AddCommand(newCmdRedrive(f, nil))
	root.AddCommand(newCmdDiscard(f, nil))
	root.AddCommand(newCmdPurge(f, nil))
	root.AddCommand(newCmdAudit(f, nil))
	root.AddCommand(newHelpRedriveSafety())
	root.AddCommand(newCmdTUI(f, nil))
	root.AddCommand(newCmdTriage(f, nil))
	root.AddCommand(newHelpTopics(root))
}

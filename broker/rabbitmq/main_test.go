package rabbitmq

import (
	"testing"

	"github.com/dlq-tools/dlq/internal/testenv"
)

// TestMain runs the tests without the settings of the person or machine
// that runs them (see internal/testenv).
func TestMain(m *testing.M) { testenv.Main(m) }

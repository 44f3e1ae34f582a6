package fleet

import (
	"fmt"

	"github.com/cronguard/cronguard/lease"
)

// ErrLocalZone: a cron schedule spec in the location "Local", which a
// replica built before the scheduler refused time.Local may have
// registered. Its occurrences depend on that replica's own zone, which
// nothing records, so Next refuses to read it in the zone of the machine
// reading it. It wraps lease.ErrInvalidArgument.
var ErrLocalZone = fmt.Errorf("fleet: schedule in zone Local, the registering machine's own, which is not recorded: %w", lease.ErrInvalidArgument)

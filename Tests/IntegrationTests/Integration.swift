import Testing

/// Every integration suite nests here, so they run one at a time against the one private broker:
/// worker processes of different suites would otherwise compete for the machine's two cores.
@Suite(.serialized) struct Integration {}

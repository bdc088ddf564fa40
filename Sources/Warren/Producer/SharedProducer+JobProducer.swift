/// A shared producer enqueues typed jobs (``JobProducer/enqueue(_:_:options:watch:)``) and awaits their results.
extension SharedProducer: JobProducer {}

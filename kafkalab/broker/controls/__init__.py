"""The lab controls no production broker has: fault injection (:mod:`.faults`), step-through
(:mod:`.hold`), version personas (:mod:`.personas`) and a cluster in one process (:mod:`.cluster`), applied
at the dispatcher's interception hook by :mod:`.intercept`. Sans-IO throughout."""

"""A Celery application whose task dead-letters its message, for dlq's
integration test (cmd/celery_integration_test.go).

    python3 -I celery_app.py send      publishes one shop.charge_card task
    python3 -I celery_app.py worker    runs a real worker (solo pool) on it

The task asks Celery for one retry (self.retry: Celery publishes the message
again with retries=1), then rejects it without requeue
(celery.exceptions.Reject, with task_acks_late), so that RabbitMQ
dead-letters it to the work queue's DLX with x-death. The environment
names the site folder of the unpacked Debian packages (DLQ_CELERY_SITE),
the broker (DLQ_CELERY_BROKER) and the queues (DLQ_CELERY_QUEUE,
DLQ_CELERY_DLQ).
"""
import os
import sys

sys.path.insert(0, os.environ["DLQ_CELERY_SITE"])

from celery import Celery  # noqa: E402
from celery.exceptions import Reject  # noqa: E402
from kombu import Exchange, Queue  # noqa: E402

work = os.environ["DLQ_CELERY_QUEUE"]
dlq = os.environ["DLQ_CELERY_DLQ"]

app = Celery("dlqtest", broker=os.environ["DLQ_CELERY_BROKER"])
app.conf.update(
    task_queues=[
        Queue(work, Exchange(work, type="direct"), routing_key=work,
              queue_arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}),
    ],
    task_default_queue=work,
    task_default_exchange=work,
    task_default_routing_key=work,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
    # No remote control: it would leave a celery.pidbox exchange behind.
    worker_enable_remote_control=False,
    broker_connection_retry_on_startup=False,
    broker_connection_max_retries=1,
)


@app.task(name="shop.charge_card", bind=True)
def charge_card(self, order_id, amount, currency="EUR"):
    if self.request.retries < 1:
        raise self.retry(countdown=0)
    raise Reject("card declined for order %s" % order_id, requeue=False)


if __name__ == "__main__":
    if sys.argv[1:] == ["send"]:
        r = charge_card.apply_async(args=[4711, "19.99"], kwargs={"currency": "EUR"})
        print(r.id)
    elif sys.argv[1:] == ["worker"]:
        app.worker_main(["worker", "--pool", "solo", "--concurrency", "1", "--queues", work,
                         "--without-heartbeat", "--without-mingle", "--without-gossip",
                         "--loglevel", "INFO", "--hostname", "dlqtest@%h"])
    else:
        sys.exit("usage: celery_app.py send|worker")

/* SPDX-License-Identifier: MIT */
/*
 * Concurrency: clones of one skb (sharing head, frags and a frag_list) are
 * dropped on many threads; one skb with a user a thread, and one reached
 * through a shared frag_list, cloned on several at once; page references
 * taken and dropped concurrently; skbs allocated on one thread and freed
 * on another; threads exit with objects in their caches; with the caches
 * off, every thread's shells and heads come from the shared stacks at
 * once, and a fork's child uses them. Run under TSan by
 * `make test SANITIZE=thread`.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"

#define THREADS 4
#define ROUNDS 2000

static struct uskb_head q;
static atomic_int done_producers;

struct share_arg {
	struct uskb *clones[THREADS];
	unsigned char want[600];
};

static void *drop_clone(void *arg)
{
	struct uskb *skb = arg;
	unsigned char buf[600];

	/* read the shared data, then drop this thread's references */
	if (uskb_copy_bits(skb, 0, buf, (int)skb->len))
		abort();
	if (uskb_may_pull(skb, 100) == false) /* private head after unclone */
		abort();
	uskb_free(skb);
	return NULL;
}

static void test_shared_clones(void)
{
	struct uskb_page *pg = uskb_page_alloc(0);
	int r;

	t_fill(uskb_page_address(pg), USKB_PAGE_SIZE, 2);
	for (r = 0; r < ROUNDS / 10; r++) {
		pthread_t th[THREADS];
		struct uskb *skb = uskb_alloc(128), *fl = uskb_alloc(64);
		int i;

		t_fill(uskb_put(skb, 40), 40, (unsigned int)r);
		uskb_page_get(pg);
		uskb_add_rx_frag(skb, 0, pg, 0, 300, 300);
		t_fill(uskb_put(fl, 60), 60, 1);
		uskb_append_frag_list(skb, fl);
		for (i = 0; i < THREADS; i++) {
			struct uskb *c = (i & 1) ? uskb_clone(skb) : uskb_pskb_copy(skb);

			pthread_create(&th[i], NULL, drop_clone, c);
		}
		uskb_free(skb);
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
	}
	/* the other threads deferred our clones to us: free them now */
	uskb_cache_drain();
	CHECK_EQ(uskb_page_ref_count(pg), 1);
	uskb_page_put(pg);
}

static void *producer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		struct uskb *skb = uskb_alloc((unsigned int)(i % 700));

		uskb_put_zero(skb, (unsigned int)(i % 700) / 2);
		*(int *)skb->cb = i;
		uskb_queue_tail(&q, skb);
	}
	atomic_fetch_add(&done_producers, 1);
	return NULL; /* exits with objects still in its caches and in flight */
}

static void *consumer(void *arg)
{
	long n = 0;

	(void)arg;
	for (;;) {
		struct uskb *skb = uskb_dequeue(&q);

		if (!skb) {
			/* producers done: one more locked look sees all they queued */
			if (atomic_load(&done_producers) == THREADS / 2 && !(skb = uskb_dequeue(&q)))
				break;
			if (!skb)
				continue;
		}
		if (skb->len != (unsigned int)(*(int *)skb->cb % 700) / 2)
			abort();
		uskb_free(skb);
		n++;
	}
	return (void *)n;
}

static void test_cross_thread_free(void)
{
	pthread_t p[THREADS / 2], c[THREADS / 2];
	long total = 0;
	int i;

	uskb_queue_head_init(&q);
	for (i = 0; i < THREADS / 2; i++) {
		pthread_create(&p[i], NULL, producer, NULL);
		pthread_create(&c[i], NULL, consumer, NULL);
	}
	for (i = 0; i < THREADS / 2; i++)
		pthread_join(p[i], NULL);
	for (i = 0; i < THREADS / 2; i++) {
		void *n;

		pthread_join(c[i], &n);
		total += (long)n;
	}
	CHECK_EQ(total, (long)ROUNDS * (THREADS / 2));
}

static struct uskb_page *hot;

static void *page_refs(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < ROUNDS * 10; i++) {
		uskb_page_get(hot);
		uskb_page_put(hot);
	}
	return NULL;
}

static void test_page_refs(void)
{
	pthread_t th[THREADS];
	int i;

	hot = uskb_page_alloc(0);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, page_refs, NULL);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(uskb_page_ref_count(hot), 1);
	uskb_page_put(hot);
}

/*
 * One skb, one user reference a thread, cloned and the clone freed on
 * every thread at once: the data's count must come back to 1, never
 * below (a lost add frees the head under a clone). Cloned once here
 * first: the first clone sets the skb's cloned bit, a plain write.
 */
static void clone_many(struct uskb *skb)
{
	int i;

	for (i = 0; i < 20 * ROUNDS; i++) {
		struct uskb *c = uskb_clone(skb);

		if (!c || c->len != skb->len)
			abort();
		uskb_free(c);
	}
}

static void *clone_loop(void *arg)
{
	clone_many(arg);
	uskb_free(arg); /* this thread's user reference */
	return NULL;
}

static void test_clone_shared_users(void)
{
	struct uskb *skb = uskb_alloc(128);
	pthread_t th[THREADS];
	int i;

	t_fill(uskb_put(skb, 40), 40, 3);
	uskb_free(uskb_clone(skb));
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, clone_loop, uskb_get(skb));
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&skb->users), 1);
	CHECK_EQ(atomic_load(&__uskb_shinfo_peek(skb)->dataref), 1);
	uskb_free(skb);
	uskb_cache_drain();
}

/*
 * The skb on a cloned skb's frag_list has one user, yet the threads that
 * hold the skb and its clone reach it both (as skb_segment() clones
 * list_skb): cloning it on both at once must still count every clone. A
 * clone that stored dataref 2 when it read users 1 and dataref 1 would
 * lose adds here.
 */
static void *clone_list_loop(void *arg)
{
	clone_many(__uskb_shinfo_peek(arg)->frag_list);
	uskb_free(arg); /* the skb or its clone, whose frag_list it was */
	return NULL;
}

static void test_clone_frag_list_shared(void)
{
	struct uskb *p = uskb_alloc(128), *x = uskb_alloc(128), *p2;
	pthread_t th[2];

	t_fill(uskb_put(x, 60), 60, 4);
	uskb_append_frag_list(p, x);
	uskb_free(uskb_clone(x)); /* the first clone's plain write of x's cloned bit, here */
	p2 = uskb_clone(p);
	CHECK_EQ(atomic_load(&x->users), 1);
	pthread_create(&th[0], NULL, clone_list_loop, p);
	pthread_create(&th[1], NULL, clone_list_loop, p2);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	uskb_cache_drain();
}

/*
 * With the caches off each shell comes from the slab's shared stack one at
 * a time, under its lock, and heads of three sizes refill and flush the
 * per-thread head caches through the shared head stacks: an object two
 * threads were given at once shows as another thread's stamp.
 */
static void slab_round(unsigned int id, unsigned int i)
{
	static const unsigned int sizes[] = { 200, 1000, 3000 };
	unsigned int n = 1 + i % 8, k;
	struct uskb *held[8];

	for (k = 0; k < n; k++) {
		unsigned int size = sizes[(i + k) % 3];

		held[k] = uskb_alloc(size);
		if (!held[k])
			abort();
		held[k]->mark = id << 24 | (i & 0xffff) << 8 | k;
		memset(uskb_put(held[k], size), (int)id, size);
	}
	for (k = 0; k < n; k++) {
		unsigned int size = sizes[(i + k) % 3];

		if (held[k]->mark != (id << 24 | (i & 0xffff) << 8 | k) || held[k]->len != size ||
		    held[k]->data[0] != id || held[k]->data[size - 1] != id)
			abort();
		uskb_free(held[k]);
	}
}

static atomic_bool slab_stop;

static void *slab_stamps(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg, i;

	for (i = 0; i < ROUNDS * 4 || !atomic_load(&slab_stop); i++)
		slab_round(id, i);
	return NULL;
}

static void test_slab_contention(void)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) }, off;
	pthread_t th[THREADS];
	unsigned int i;

	CHECK_EQ(uskb_cache_get_opts(&o), 0);
	off = o;
	off.cache_size = 0;
	CHECK_EQ(uskb_cache_set_opts(&off), 0);
	atomic_store(&slab_stop, true);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, slab_stamps, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(uskb_cache_set_opts(&o), 0);
}

/*
 * fork() while other threads allocate and free through the shared stacks:
 * each child must find every stack whole and unlocked, and allocate and
 * free as the parent did.
 */
static void test_slab_fork(void)
{
	struct uskb_cache_opts o = { .sz = sizeof(o) }, off;
	pthread_t th[THREADS - 1];
	unsigned int i;
	int f;

	CHECK_EQ(uskb_cache_get_opts(&o), 0);
	off = o;
	off.cache_size = 0;
	CHECK_EQ(uskb_cache_set_opts(&off), 0);
	atomic_store(&slab_stop, false);
	for (i = 0; i < THREADS - 1; i++)
		pthread_create(&th[i], NULL, slab_stamps, (void *)(uintptr_t)(i + 1));
	for (f = 0; f < 20; f++) {
		int status = -1;
		pid_t pid = fork();

		if (pid == 0) {
			alarm(10); /* a stack left locked: the child would wait forever */
			for (i = 0; i < ROUNDS; i++)
				slab_round(THREADS, i);
			_exit(0);
		}
		CHECK(pid > 0);
		if (pid < 0)
			break;
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			CHECK(!"a fork's child could not allocate and free");
			break;
		}
	}
	atomic_store(&slab_stop, true);
	for (i = 0; i < THREADS - 1; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(uskb_cache_set_opts(&o), 0);
}

int main(void)
{
	test_shared_clones();
	test_clone_shared_users();
	test_clone_frag_list_shared();
	test_cross_thread_free();
	test_page_refs();
	test_slab_contention();
	test_slab_fork();
	return t_end("threads");
}

// SPDX-License-Identifier: GPL-2.0
/* a queue of jobs kept in a linked list */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/list.h>

struct kgym_job {
	struct list_head node;
	int id;
};

static LIST_HEAD(kgym_queue);
static DEFINE_MUTEX(kgym_lock);
static struct kgym_job kgym_jobs[4];

static noinline int kgym_gpf_pop(void)
{
	struct kgym_job *job;

	if (list_empty(&kgym_queue))
		return -ENOENT;
	job = list_first_entry(&kgym_queue, struct kgym_job, node);
	list_del(&job->node);
	/* peek at the job that is now at the head of the queue */
	job = list_entry(job->node.next, struct kgym_job, node);
	return job->id;
}

static ssize_t kgym_gpf_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *off)
{
	int i, ret;

	mutex_lock(&kgym_lock);
	INIT_LIST_HEAD(&kgym_queue);
	for (i = 0; i < ARRAY_SIZE(kgym_jobs); i++) {
		kgym_jobs[i].id = i;
		list_add_tail(&kgym_jobs[i].node, &kgym_queue);
	}
	ret = kgym_gpf_pop();
	mutex_unlock(&kgym_lock);
	pr_info("kgym_gpf: next job %d\n", ret);
	return len;
}

static const struct proc_ops kgym_gpf_ops = {
	.proc_write = kgym_gpf_write,
};

static int __init kgym_gpf_init(void)
{
	if (!proc_create("kgym_gpf", 0222, NULL, &kgym_gpf_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_gpf_exit(void)
{
	remove_proc_entry("kgym_gpf", NULL);
}

module_init(kgym_gpf_init);
module_exit(kgym_gpf_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_gpf");

// SPDX-License-Identifier: GPL-2.0
/* a ring buffer of samples; writing N sums the ring from the head to slot N */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/spinlock.h>

#define KGYM_RING 8

static int kgym_ring[KGYM_RING] = { 3, 1, 4, 1, 5, 9, 2, 6 };
static unsigned int kgym_head;
static DEFINE_SPINLOCK(kgym_lock);

static noinline long kgym_lockup_scan(unsigned int end)
{
	unsigned int i;
	long sum = 0;

	for (i = kgym_head; i != end; i = (i + 1) % KGYM_RING)
		sum += READ_ONCE(kgym_ring[i]);
	return sum;
}

static ssize_t kgym_lockup_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *off)
{
	unsigned int end;
	long sum;
	int err;

	err = kstrtouint_from_user(ubuf, len, 10, &end);
	if (err)
		return err;
	spin_lock(&kgym_lock);
	sum = kgym_lockup_scan(end);
	spin_unlock(&kgym_lock);
	pr_info("kgym_lockup: sum %ld\n", sum);
	return len;
}

static const struct proc_ops kgym_lockup_ops = {
	.proc_write = kgym_lockup_write,
};

static int __init kgym_lockup_init(void)
{
	if (!proc_create("kgym_lockup", 0222, NULL, &kgym_lockup_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_lockup_exit(void)
{
	remove_proc_entry("kgym_lockup", NULL);
}

module_init(kgym_lockup_init);
module_exit(kgym_lockup_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_lockup");

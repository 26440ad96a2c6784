// SPDX-License-Identifier: GPL-2.0
/* a table of per-slot counters; writing N bumps counter N */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


#define KGYM_SLOTS 6

static int *kgym_counters;
static DEFINE_MUTEX(kgym_lock);

static ssize_t kgym_oob_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *off)
{
	unsigned int slot;
	int err;

	err = kstrtouint_from_user(ubuf, len, 10, &slot);
	if (err)
		return err;
	if (slot > KGYM_SLOTS)
		return -EINVAL;
	mutex_lock(&kgym_lock);
	if (!kgym_counters)
		kgym_counters = kcalloc(KGYM_SLOTS, sizeof(*kgym_counters), GFP_KERNEL);
	if (kgym_counters) {
		kgym_counters[slot]++;
		pr_info("kgym_oob: slot %u -> %d\n", slot, kgym_counters[slot]);
	}
	mutex_unlock(&kgym_lock);
	return len;
}

static const struct proc_ops kgym_oob_ops = {
	.proc_write = kgym_oob_write,
};

static int __init kgym_oob_init(void)
{
	if (!proc_create("kgym_oob", 0222, NULL, &kgym_oob_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_oob_exit(void)
{
	remove_proc_entry("kgym_oob", NULL);
}

module_init(kgym_oob_init);
module_exit(kgym_oob_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_oob");
